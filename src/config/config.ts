import { z } from 'zod';
import { callbackSettings } from './callback-config.js';
import { opsAuthProblems, opsAuthSettings } from './ops-auth-config.js';
import { retentionSettings } from './retention-config.js';
import { reconcileSettings } from './reconcile-config.js';
import { sharedPartnerKeySetting, sourceIsolationProblem } from './source-isolation.js';
import { partnerKeysBySource, secretsBySource, weightsBySource } from './source-config.js';

/**
 * Every environment variable rentbridge reads, parsed once at start (docs/configuration.md).
 * A missing or bad value stops the process with exit code 2, naming the variable.
 */

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();

const brokers = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )
  .pipe(
    z
      .array(z.string().regex(/^[A-Za-z0-9._-]+:\d{1,5}$/, 'each broker must be host:port'))
      .min(1, 'at least one broker, as host:port[,host:port...]'),
  );

const secretList = z
  .string()
  .transform((v) =>
    v
      .split(/[\s,]+/)
      .map((s) => s.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.string()));

export const configSchema = z
  .object({
    /** PostgreSQL connection string; `?schema=name` selects a schema. */
    DATABASE_URL: z
      .url({ protocol: /^postgres(ql)?$/ })
      .default('postgresql://postgres@127.0.0.1:5432/postgres'),
    /** Comma-separated `host:port` list. Default `127.0.0.1:9092`. */
    KAFKA_BROKERS: brokers.default(['127.0.0.1:9092']),
    /** Prepended to every topic name (e.g. `prod.`). Default empty. */
    KAFKA_TOPIC_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9._-]*$/, 'only letters, digits, ".", "_" and "-"')
      .default(''),
    /** Partitions for the topics rentbridge creates. Default 3. */
    KAFKA_TOPIC_PARTITIONS: positiveInt.default(3),
    KAFKA_CLIENT_ID: z.string().min(1).default('rentbridge'),
    /**
     * Replicas of each topic rentbridge creates. Unset: min(3, brokers in the cluster), so one
     * broker works and a cluster of three keeps a copy on each (kafkajs would otherwise create
     * topics with one replica, whatever the broker's default.replication.factor).
     */
    KAFKA_REPLICATION_FACTOR: positiveInt.max(32).optional(),
    /** Replicas that must have a write before an acks=all producer hears "ok". Unset: replication factor - 1 (at least 1). */
    KAFKA_MIN_INSYNC_REPLICAS: positiveInt.max(32).optional(),
    /**
     * partner.<resource> changelogs: the newest this old or younger are never compacted away, and a
     * tombstone is kept this long, so a consumer at most this far behind sees every change and
     * every removal. Default 168 h (7 days, the broker's default retention).
     */
    KAFKA_CHANGELOG_MIN_COMPACTION_LAG_HOURS: positiveInt.default(168),
    /**
     * partner.<resource> changelogs: a superseded or tombstoned version is compacted away at the
     * latest this long after it was written (`max.compaction.lag.ms`), so an erased person's record
     * leaves the changelog by a stated date (docs/privacy.md). Default 336 h (14 days); at least
     * KAFKA_CHANGELOG_MIN_COMPACTION_LAG_HOURS.
     */
    KAFKA_CHANGELOG_MAX_COMPACTION_LAG_HOURS: positiveInt.default(336),
    /** How long commands.* are kept on Kafka. Default 168 h. */
    KAFKA_COMMAND_RETENTION_HOURS: positiveInt.default(168),
    /** How long outcomes.* are kept on Kafka. Default 168 h. */
    KAFKA_OUTCOME_RETENTION_HOURS: positiveInt.default(168),
    /** How long inbound.unrouted is kept on Kafka. Default 720 h (30 days). */
    KAFKA_UNROUTED_RETENTION_HOURS: positiveInt.default(720),
    /**
     * How long <topic>.dlq is kept on Kafka. Default 720 h (30 days): dead letters carry personal
     * data, so none is kept forever (docs/privacy.md); the dead-letter index in PostgreSQL, which
     * redrives read, keeps the letters themselves.
     */
    KAFKA_DLQ_RETENTION_HOURS: positiveInt.default(720),
    /** How soon a dead consumer's partitions move to another member. Default 6000 ms, the broker's least (decision 056). */
    KAFKA_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6000).max(300_000).default(6_000),
    /** Partner API base URL. Required by every role (`rentbridge start --demo` runs the embedded sandbox instead). */
    PARTNER_API_URL: z.url({ protocol: /^https?$/ }).optional(),
    PARTNER_ACCESS_KEY: z.string().min(1).default('sandbox-access-key'),
    PARTNER_SECRET_KEY: z.string().min(1).default('sandbox-secret-key'),
    /** Sends `X-Access-Token` on every call (spec 5.5). Default false. */
    PARTNER_ENHANCED_SECURITY: bool.default(false),
    /** The shared budget of every process on this egress IP (spec 8). Default 650. */
    PARTNER_RATE_LIMIT_PER_MINUTE: positiveInt.default(650),
    /** The issue_access_token limit of every process on this egress IP (spec 8), a budget of its own. Default 2500. */
    PARTNER_TOKEN_RATE_LIMIT_PER_MINUTE: positiveInt.default(2500),
    /** Time-out of one Partner API call. Default 10000 ms. */
    PARTNER_TIMEOUT_MS: positiveInt.default(10_000),
    /**
     * The Partner API's longest processing time of a write (src/partner/assumptions.ts): past it
     * a write answers 503 request_timeout and is not applied, so the guard concludes "not
     * applied" only from a read made this long after its last send. Default 30000 ms.
     */
    PARTNER_MAX_PROCESSING_MS: positiveInt.default(30_000),
    /**
     * How old a list read of a record may be and still serve as the guard's snapshot before a
     * write (issue 43, docs/decisions/043): reads by any process, the poller's full passes
     * included, are stored; an older one is refused and the record's page re-read. 0: every
     * snapshot reads its page. Default 600000 ms (10 min: longer than the poller's 300 s pass).
     */
    SNAPSHOT_MAX_AGE_MS: z.coerce.number().int().min(0).default(600_000),
    /**
     * Commands a command consumer applies at once, for different target records (one record's
     * commands always one at a time, in arrival order; decision 054). Default 8.
     */
    CONSUMER_CONCURRENCY: positiveInt.max(64).default(8),
    /**
     * Messages a command consumer holds ahead of the ones it applies (waiting and running); past it
     * its partitions pause until half is done. Deep enough to reach past a month-end burst of one source
     * to another source's commands (a held command costs about 2 kB). Default 2000.
     */
    CONSUMER_READ_AHEAD: positiveInt.max(20_000).default(2000),
    /**
     * Which environment PARTNER_API_URL is (spec: separate sandbox and production environments).
     * `rentbridge probe --write` runs only when this says `sandbox`. Unset: not declared.
     */
    PARTNER_ENVIRONMENT: z.enum(['sandbox', 'production']).optional(),
    /**
     * A `rentbridge probe` result (JSON): the command consumers refuse to start (exit 2) when it
     * says an assumption the guard relies on does not hold. Unset: not checked.
     */
    PARTNER_PROBE_RESULT: z.string().min(1).optional(),
    /** Start the consumers although PARTNER_PROBE_RESULT says a guard assumption does not hold. Default false. */
    PARTNER_PROBE_OVERRIDE: bool.default(false),
    /**
     * `rentbridge start` without DATABASE_URL: the PostgreSQL on 127.0.0.1 at this port, or an
     * embedded one started there. Default 5432.
     */
    LOCAL_PG_PORT: port.default(5432),
    /**
     * `rentbridge start` without KAFKA_BROKERS: the broker on 127.0.0.1 at this port, or the one of
     * scripts/kafka.sh started there (its controller on the next port). Default 9092.
     */
    LOCAL_KAFKA_PORT: port.default(9092),
    /** The embedded PostgreSQL's folder (cluster in data/, postgres.log). Default `.postgres` in the project. */
    LOCAL_PG_DIR: z.string().min(1).optional(),
    /** Port of the embedded sandbox of `rentbridge start --demo`. Default 4010. */
    SANDBOX_PORT: port.default(4010),
    /** Port of the receiver, the ops API and console, /metrics and health. Default 8080. */
    HTTP_PORT: port.default(8080),
    /** Break-glass admin token of the ops API and console (every use audited as break-glass). Unset: only personal tokens and single sign-on. */
    OPS_TOKEN: z.string().min(16, 'at least 16 characters').optional(),
    /** Single sign-on and sessions of the console (OPS_OIDC_*, OPS_ROLE_MAP): src/config/ops-auth-config.ts. */
    ...opsAuthSettings,
    /** Secrets of the Partner API's webhooks, comma- or space-separated (several during rotation). */
    PARTNER_WEBHOOK_SECRETS: secretList.default([]),
    /** Secrets of each property-management system, JSON: {"acme":["whsec_..."]}. */
    PMS_WEBHOOK_SECRETS: secretsBySource.default({}),
    /**
     * Per PMS source, its own Partner API key pair, JSON:
     * {"acme":{"access_key":"...","secret_key":"...","read_only":false,"scoped":true}}. A source
     * without one uses PARTNER_ACCESS_KEY. Default {}. With two or more sources, each needs one
     * (src/config/source-isolation.ts).
     */
    PMS_PARTNER_KEYS: partnerKeysBySource.default({}),
    /** `trusted`: two or more PMS sources may share a Partner API key (they trust each other). Unset: refused. */
    PMS_SHARED_PARTNER_KEY: sharedPartnerKeySetting,
    /**
     * Each PMS source's weight in the shared budget, JSON: {"acme":3}. While several sources have
     * commands waiting, slots go round-robin by source in these proportions; a source not named
     * weighs 1. Default {} (every source 1).
     */
    PMS_WEIGHTS: weightsBySource.default({}),
    /** Outcome callbacks per PMS source (PMS_CALLBACKS, CALLBACK_*): src/config/callback-config.ts. */
    ...callbackSettings,
    ...retentionSettings,
    /** Reconciliation (RECONCILE_INTERVAL, RECONCILE_REDRIVE_ABSENT): src/config/reconcile-config.ts. */
    ...reconcileSettings,
    /** Largest webhook body accepted. Default 262144 bytes. */
    WEBHOOK_MAX_BODY_BYTES: positiveInt.default(256 * 1024),
    /** How far a webhook's timestamp may be from now. Default 300 s. */
    WEBHOOK_TOLERANCE_SECONDS: positiveInt.default(300),
    /** How long a webhook waits for PostgreSQL before a 503 + Retry-After (nothing stored). Default 5000 ms. */
    WEBHOOK_STORAGE_TIMEOUT_MS: positiveInt.default(5000),
    /** Webhooks held at once (bodies in memory); beyond it a 503 + Retry-After at once. Default 256. */
    WEBHOOK_MAX_IN_FLIGHT: positiveInt.default(256),
    /** Most bytes per Kafka request and per message; below the broker's message.max.bytes. Default 900000. */
    RELAY_MAX_BATCH_BYTES: z.coerce.number().int().min(1024).default(900_000),
    /**
     * /readyz fails and rentbridge_relay_stalled is 1 when the oldest unpublished row is older; the
     * relay's own readiness says "cannot publish" when rows wait and no send succeeded for as long. Default 120 s.
     */
    RELAY_STALL_SECONDS: positiveInt.default(120),
    /** Wait for one Kafka request's ack past which its rows say so (last_error, a warning); the same send goes on (decision 056). Default 5000 ms. */
    RELAY_SEND_TIMEOUT_MS: positiveInt.default(5000),
    /** Most rows the relay reads at once per topic (reads are sized to about one request below it). Default 5000. */
    RELAY_BATCH_ROWS: positiveInt.default(5000),
    /** Time to receive a request's headers; a slower sender is cut off. Default 10000 ms. */
    HTTP_HEADERS_TIMEOUT_MS: positiveInt.default(10_000),
    /** Time to receive a whole request (headers and body). Default 30000 ms. */
    HTTP_REQUEST_TIMEOUT_MS: positiveInt.default(30_000),
    /** How long an idle keep-alive connection is kept. Default 5000 ms. */
    HTTP_KEEP_ALIVE_TIMEOUT_MS: positiveInt.default(5000),
    /** Most open connections at once; more are closed at once. Default 1024. */
    HTTP_MAX_CONNECTIONS: positiveInt.default(1024),
    /** Bearer token for /metrics. Unset (default): /metrics is open. */
    METRICS_TOKEN: z.string().min(16, 'at least 16 characters').optional(),
    /** How long published outbox rows are kept. Default 72 h. */
    OUTBOX_RETENTION_HOURS: positiveInt.default(72),
    /** Default interval between poller passes of a resource. Default 300 s. */
    POLL_INTERVAL_SECONDS: positiveInt.default(300),
    /** Per-resource intervals, JSON: {"applications":60}. */
    POLL_INTERVALS: z
      .string()
      .transform((v, ctx) => {
        try {
          return JSON.parse(v) as unknown;
        } catch {
          ctx.addIssue({ code: 'custom', message: 'must be JSON, e.g. {"applications":60}' });
          return z.NEVER;
        }
      })
      .pipe(z.record(z.string(), z.number().int().positive()))
      .default({}),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** `json` or `pretty` (short readable lines); unset: pretty when stdout is a terminal, else JSON. */
    LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  })
  .superRefine((c, ctx) => {
    for (const [variable, message] of opsAuthProblems(c))
      ctx.addIssue({ code: 'custom', path: [variable], message });
    if (
      c.KAFKA_REPLICATION_FACTOR !== undefined &&
      c.KAFKA_MIN_INSYNC_REPLICAS !== undefined &&
      c.KAFKA_MIN_INSYNC_REPLICAS > c.KAFKA_REPLICATION_FACTOR
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['KAFKA_MIN_INSYNC_REPLICAS'],
        message: 'must not exceed KAFKA_REPLICATION_FACTOR: no write could ever be acknowledged',
      });
    }
    // A sandbox declared as such (compose's sandbox service, on another host) may keep its default key.
    if (
      c.PARTNER_API_URL &&
      c.PARTNER_SECRET_KEY === 'sandbox-secret-key' &&
      !isLocal(c.PARTNER_API_URL) &&
      c.PARTNER_ENVIRONMENT !== 'sandbox'
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['PARTNER_SECRET_KEY'],
        message: 'required when PARTNER_API_URL points at a real Partner API',
      });
    }
    if (c.KAFKA_CHANGELOG_MAX_COMPACTION_LAG_HOURS < c.KAFKA_CHANGELOG_MIN_COMPACTION_LAG_HOURS) {
      ctx.addIssue({
        code: 'custom',
        path: ['KAFKA_CHANGELOG_MAX_COMPACTION_LAG_HOURS'],
        message: 'must be at least KAFKA_CHANGELOG_MIN_COMPACTION_LAG_HOURS',
      });
    }
    // A command still on its topic must still find its guard row, or a re-read would apply it again.
    if (c.COMMAND_RETENTION_DAYS * 24 < c.KAFKA_COMMAND_RETENTION_HOURS) {
      ctx.addIssue({
        code: 'custom',
        path: ['COMMAND_RETENTION_DAYS'],
        message:
          'must cover KAFKA_COMMAND_RETENTION_HOURS: a command still on its topic would be applied again',
      });
    }
    // A key under a name no PMS signs with would never be used: the source's commands would run on
    // the deployment key, which is exactly what a source key is there to prevent.
    for (const source of Object.keys(c.PMS_PARTNER_KEYS)) {
      if (!c.PMS_WEBHOOK_SECRETS[source]) {
        ctx.addIssue({
          code: 'custom',
          path: ['PMS_PARTNER_KEYS'],
          message: `source "${source}" has no PMS_WEBHOOK_SECRETS entry`,
        });
      }
    }
    // Fail closed: two sources on one key could reach each other's tenants (issue 51).
    const isolation = sourceIsolationProblem(c);
    if (isolation) ctx.addIssue({ code: 'custom', path: ['PMS_PARTNER_KEYS'], message: isolation });
  });

function isLocal(url: string): boolean {
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '127.0.0.1' || host === '::1' || host === '[::1]';
}

export type Config = Readonly<z.infer<typeof configSchema>>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment; throws a ConfigError naming every bad variable. Empty strings count as unset. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input = Object.fromEntries(
    Object.keys(configSchema.shape).flatMap((k) => {
      const v = env[k];
      return v === undefined || v === '' ? [] : [[k, v]];
    }),
  );
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => `${String(i.path[0] ?? 'environment')}: ${i.message}`),
    );
  }
  return Object.freeze(parsed.data);
}
