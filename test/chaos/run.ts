import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import * as prettier from 'prettier';
import { allTopics, ensureTopics } from '../../src/kafka/topics.js';
import { createSandboxControl, type SandboxControl } from '../../src/dev/sandbox/control-client.js';
import {
  analyseCallbacks,
  planOutages,
  startCallbackEndpoint,
  type CallbackEndpoint,
} from './callback-endpoint.js';
import { chaosOptions, createRandom } from './chaos-options.js';
import {
  CHAOS_CLIENT_TIMEOUT_MS,
  CHAOS_MAX_PROCESSING_MS,
  createFaultInjector,
  type Probes,
} from './fault-injector.js';
import { planFaults } from './fault-schedule.js';
import { computeFigures, figuresMarkdown, type ChaosFigures } from './figures.js';
import { analyse, FINAL_STATES } from './invariants.js';
import { createKafkaBroker, type KafkaBroker } from './kafka-broker.js';
import { runHostilePhase } from './hostile-traffic.js';
import { commandKey, createLoadGenerator, PRIMARY_SOURCE, SECOND_SOURCE } from './load-generator.js';
import { startPostgresCluster, type PostgresCluster } from './postgres-cluster.js';
import { alive, createSupervisor, type Supervisor } from './process-supervisor.js';
import { readTopics } from './topic-reader.js';
import { measureCompaction } from './compaction.js';
import { reconcileAtEnd } from './reconcile-check.js';

/**
 * `npm run test:chaos`: the whole system as separate processes, on a PostgreSQL cluster and a
 * Kafka broker of its own, under a steady load of signed webhooks and record changes, while
 * processes are SIGKILLed, the broker and the database restarted, the sandbox's faults turned on
 * in storms and tokens expired. Then it drains, checks the promises (invariants.ts), prints the
 * figures, writes them to docs/chaos.md, and exits 1 if any promise was broken.
 *
 * Size with CHAOS_SECONDS (default 120) and CHAOS_RATE (events/s, default 5); CHAOS_SEED replays
 * a run's faults and load mix. Logs of every process: test-artifacts/chaos/.
 */

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const artifacts = join(repoRoot, 'test-artifacts', 'chaos');
const PREFIX = 'chaos.';
const SCHEMA = 'rentbridge';
const ROLES = [
  'receiver',
  'relay',
  'consumer-application-decisions',
  'consumer-rental-payments',
  'consumer-customer-registrations',
  'consumer-enrollments',
  'callbacks',
];

const started = Date.now();
function log(message: string): void {
  console.log(`[chaos +${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);
}

async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn().catch(() => false)) return;
    await sleep(250);
  }
  throw new Error(`${what} did not come up within ${timeoutMs} ms`);
}

async function answers(url: string, okOnly = false): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  return okOnly ? res.ok : res.status > 0;
}

interface Resources {
  pg?: PostgresCluster;
  kafka?: KafkaBroker;
  supervisor?: Supervisor;
  pool?: pg.Pool;
  callbackEndpoint?: CallbackEndpoint;
  tmp: string[];
}

/** Stops everything the run started, in reverse order; safe to call twice. */
let cleaning: Promise<string[]> | null = null;
function cleanup(r: Resources): Promise<string[]> {
  cleaning ??= (async () => {
    log('stopping every process the run started');
    await r.pool?.end().catch(() => undefined);
    await r.callbackEndpoint?.close().catch(() => undefined);
    await r.supervisor?.stopAll().catch(() => undefined);
    await r.kafka?.stop().catch((e: Error) => log(`kafka stop: ${e.message}`));
    await r.pg?.stop().catch((e: Error) => log(`postgres stop: ${e.message}`));
    const left: string[] = [];
    for (const pid of r.supervisor?.allPids() ?? []) if (alive(pid)) left.push(`rentbridge pid ${pid}`);
    const kafkaPid = r.kafka?.pid();
    if (kafkaPid) left.push(`kafka pid ${kafkaPid}`);
    const pgPid = r.pg?.pid();
    if (pgPid) left.push(`postgres pid ${pgPid}`);
    if (left.length === 0) for (const dir of r.tmp) rmSync(dir, { recursive: true, force: true });
    return left;
  })();
  return cleaning;
}

async function main(): Promise<number> {
  const options = chaosOptions();
  const random = createRandom(options.seed);
  log(
    `seed ${options.seed}, ${options.seconds} s at ${options.rate} events/s, drain up to ${options.drainSeconds} s`,
  );
  mkdirSync(artifacts, { recursive: true });
  for (const f of readdirSync(artifacts)) if (f.endsWith('.log')) unlinkSync(join(artifacts, f));

  const resources: Resources = { tmp: [] };
  const onSignal = (signal: string) => {
    log(`${signal}: stopping`);
    void cleanup(resources).then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    // ---- servers of its own ---------------------------------------------------------------
    const pgDir = mkdtempSync(join(tmpdir(), 'rentbridge-chaos-pg-'));
    const kafkaDir = mkdtempSync(join(tmpdir(), 'rentbridge-chaos-kafka-'));
    resources.tmp.push(pgDir, kafkaDir);
    log(`starting PostgreSQL on ${options.pgPort} (${pgDir})`);
    resources.pg = await startPostgresCluster({ dir: pgDir, port: options.pgPort });
    const pgCluster = resources.pg;
    log(`starting Kafka on ${options.kafkaPort} (${kafkaDir})`);
    resources.kafka = createKafkaBroker({
      repoRoot,
      dir: kafkaDir,
      port: options.kafkaPort,
      controllerPort: options.kafkaControllerPort,
    });
    await resources.kafka.start();
    const kafka = resources.kafka;

    const databaseUrl = `${pgCluster.url}?schema=${SCHEMA}`;
    const pmsSecret = `whsec_${randomBytes(24).toString('base64')}`;
    // A second PMS source with a Partner API key of its own, scoped to one owner (issue 34), which
    // numbers its payments apart from acme's, so their ids collide (issue 35).
    const betaSecret = `whsec_${randomBytes(24).toString('base64')}`;
    const betaKey = { access_key: 'chaos-beta-key', secret_key: `beta-${randomBytes(12).toString('hex')}` };
    const BETA_OWNER = 'owner-beta';
    const ACME_OWNER = 'owner-acme';
    const partnerSecret = `whsec_${randomBytes(24).toString('base64')}`;
    const sandboxUrl = `http://127.0.0.1:${options.sandboxPort}`;
    const receiverUrl = `http://127.0.0.1:${options.httpPortBase}`;
    // Outcome callbacks (issue 27): both sources have an endpoint the run serves itself; each goes
    // down for a while (callback-endpoint.ts).
    const callbackSecrets = {
      [PRIMARY_SOURCE]: [`whsec_${randomBytes(24).toString('base64')}`],
      [SECOND_SOURCE]: [`whsec_${randomBytes(24).toString('base64')}`],
    };
    resources.callbackEndpoint = await startCallbackEndpoint(callbackSecrets);
    const callbackEndpoint = resources.callbackEndpoint;
    const outages = planOutages(options.seconds, PRIMARY_SOURCE, SECOND_SOURCE);
    const env: Record<string, string> = {
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: kafka.brokers,
      KAFKA_TOPIC_PREFIX: PREFIX,
      PARTNER_API_URL: sandboxUrl,
      PARTNER_ACCESS_KEY: 'sandbox-access-key',
      PARTNER_SECRET_KEY: 'sandbox-secret-key',
      PARTNER_TIMEOUT_MS: String(CHAOS_CLIENT_TIMEOUT_MS),
      PARTNER_MAX_PROCESSING_MS: String(CHAOS_MAX_PROCESSING_MS),
      PARTNER_RATE_LIMIT_PER_MINUTE: '2400',
      PMS_WEBHOOK_SECRETS: JSON.stringify({ [PRIMARY_SOURCE]: [pmsSecret], [SECOND_SOURCE]: [betaSecret] }),
      PMS_PARTNER_KEYS: JSON.stringify({ [SECOND_SOURCE]: { ...betaKey, scoped: true } }),
      // The primary source acts with the deployment key beside beta's own (trusted by the operator).
      PMS_SHARED_PARTNER_KEY: 'trusted',
      PARTNER_WEBHOOK_SECRETS: partnerSecret,
      OPS_TOKEN: 'chaos-ops-token-0123456789',
      PMS_CALLBACKS: JSON.stringify(
        Object.fromEntries(
          Object.entries(callbackSecrets).map(([source, secrets]) => [
            source,
            { url: callbackEndpoint.url(source), secrets, timeout_ms: 3000 },
          ]),
        ),
      ),
      // Retries and the breaker scaled to a run of minutes, not a day.
      CALLBACK_RETRY_INITIAL_MS: '500',
      CALLBACK_RETRY_MAX_DELAY_MS: '4000',
      CALLBACK_BREAKER_COOLDOWN_MS: '2000',
      CALLBACK_POLL_MS: '250',
      LOG_LEVEL: 'info',
    };

    log('migrating');
    await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'migrate'], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      timeout: 120_000,
    });
    const admin = new Kafka({
      clientId: 'chaos-admin',
      brokers: [kafka.brokers],
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    await ensureTopics(admin, { prefix: PREFIX, partitions: 3 });
    await admin.disconnect();

    // ---- the system, one process per role -------------------------------------------------
    resources.supervisor = createSupervisor({ repoRoot, logDir: artifacts });
    const supervisor = resources.supervisor;
    supervisor.start({
      name: 'sandbox',
      args: ['sandbox', '--port', String(options.sandboxPort)],
      env: { LOG_LEVEL: 'warn' },
    });
    await waitFor('the sandbox', () => answers(`${sandboxUrl}/__sandbox/config`, true), 60_000);
    const sandbox: SandboxControl = createSandboxControl(sandboxUrl);
    await sandbox.reset();
    await sandbox.setConfig({
      rate_limit_per_minute: 3000,
      max_processing_ms: CHAOS_MAX_PROCESSING_MS,
      // The onboarding read-back under the ordering hardest for it (issue 30): customers created in
      // one second tie, and ties go by ascending id, so ours may sort after the snapshot's newest.
      created_at_precision: 'seconds',
      tie_break: 'ascending',
      ...(options.hidePayments && { enrollment_payments_visible: false, report_moves_updated_at: false }),
    });
    if (options.hidePayments) log('sandbox hides payments from enrollment records (CHAOS_HIDE_PAYMENTS=1)');
    await sandbox.createKey({ ...betaKey, owner_ids: [BETA_OWNER] });
    const enrollments = await sandbox.addRecords(
      'enrollments',
      Array.from({ length: 24 }, (_, i) => ({
        status: 'active',
        customer_id: 1000 + i,
        owner_id: i % 2 === 0 ? ACME_OWNER : BETA_OWNER,
      })),
    );
    const customers = await sandbox.addRecords(
      'customers',
      Array.from({ length: 40 }, (_, i) => ({ first_name: 'Chaos', last_name: `Tenant ${i}` })),
    );
    // From here on every record change is announced to the receiver, like the real Partner API.
    await sandbox.setConfig({
      webhook_url: `${receiverUrl}/webhooks/partner`,
      webhook_secret: partnerSecret,
      webhook_max_attempts: 10,
      webhook_retry_base_ms: 500,
    });

    const ports: Record<string, number> = {
      receiver: options.httpPortBase,
      relay: options.httpPortBase + 1,
      'consumer-application-decisions': options.httpPortBase + 2,
      'consumer-rental-payments': options.httpPortBase + 3,
      'consumer-customer-registrations': options.httpPortBase + 4,
      'consumer-enrollments': options.httpPortBase + 5,
      callbacks: options.httpPortBase + 6,
    };
    const args: Record<string, string[]> = {
      receiver: ['receiver'],
      relay: ['relay'],
      'consumer-application-decisions': ['consumer', 'application-decisions'],
      'consumer-rental-payments': ['consumer', 'rental-payments'],
      'consumer-customer-registrations': ['consumer', 'customer-registrations'],
      'consumer-enrollments': ['consumer', 'enrollments'],
      callbacks: ['callbacks', 'run'],
    };
    for (const role of ROLES) {
      supervisor.start({ name: role, args: args[role]!, env: { ...env, HTTP_PORT: String(ports[role]) } });
    }
    await waitFor('the receiver', () => answers(`${receiverUrl}/healthz`, true), 90_000);
    log('receiver up; giving the relay and consumers a moment to join');
    await sleep(5000);

    resources.pool = new pg.Pool({
      connectionString: pgCluster.url,
      max: 3,
      options: `-c search_path=${SCHEMA}`,
    });
    const pool = resources.pool;
    // The cluster is restarted on purpose: a dropped idle connection is expected, not fatal.
    pool.on('error', () => undefined);
    const scalar = async (sql: string, params: unknown[] = []): Promise<number | null> => {
      const { rows } = await pool.query<{ v: number | string | null }>(sql, params);
      const v = rows[0]?.v;
      return v === null || v === undefined ? null : Number(v);
    };

    // ---- load and faults --------------------------------------------------------------------
    let loadStopped = false;
    const load = createLoadGenerator({
      receiverUrl,
      sources: [
        { name: PRIMARY_SOURCE, secret: pmsSecret },
        { name: SECOND_SOURCE, secret: betaSecret, owner: BETA_OWNER },
      ],
      defaultOwner: ACME_OWNER,
      rate: options.rate,
      random,
      sandbox,
      enrollments: enrollments.map((e) => ({ id: e.id, owner: String(e.owner_id) })),
      customerIds: customers.map((c) => c.id),
    });
    const poll = async (fn: () => Promise<number | null>, timeoutMs: number, giveUp: () => boolean) => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const v = await fn().catch(() => null);
        if (v !== null) return v;
        if (giveUp()) return null;
        await sleep(200);
      }
      return null;
    };
    const probes: Probes = {
      nextAck: (after, timeoutMs) =>
        poll(
          async () => {
            let first: number | null = null;
            for (const h of load.state.webhooks) {
              for (const a of h.answers) {
                if (
                  a.at >= after &&
                  typeof a.status === 'number' &&
                  a.status < 300 &&
                  (first === null || a.at < first)
                )
                  first = a.at;
              }
            }
            return first === null ? null : first - after;
          },
          timeoutMs,
          () => loadStopped,
        ),
      nextPublish: (after, timeoutMs) =>
        poll(
          async () => {
            const t = await scalar(
              'SELECT extract(epoch FROM min(published_at)) * 1000 AS v FROM outbox WHERE published_at >= to_timestamp($1 / 1000.0)',
              [after],
            );
            return t === null ? null : Math.max(0, t - after);
          },
          timeoutMs,
          () => false,
        ),
      nextCommandFinished: (after, timeoutMs) =>
        poll(
          async () => {
            const t = await scalar(
              'SELECT extract(epoch FROM min(finished_at)) * 1000 AS v FROM commands WHERE finished_at >= to_timestamp($1 / 1000.0)',
              [after],
            );
            return t === null ? null : Math.max(0, t - after);
          },
          timeoutMs,
          () => false,
        ),
    };
    const injector = createFaultInjector({ supervisor, kafka, pg: pgCluster, sandbox, probes, log });
    const plan = planFaults({
      seconds: options.seconds,
      random,
      roles: ROLES,
      stormSeconds: options.stormSeconds,
    });
    log(`load starts; ${plan.length} faults planned`);
    const t0 = Date.now();
    load.start();
    const faults = injector.run(plan, t0);
    const outagesOver = callbackEndpoint.runOutages(outages, t0, log);
    const progress = setInterval(() => {
      const acked = load.state.webhooks.filter((h) => h.ackAt !== undefined).length;
      log(
        `load: ${load.state.webhooks.length} webhooks sent, ${acked} acknowledged, ${load.state.commands.size} commands`,
      );
    }, 15_000);
    // The load runs CHAOS_SECONDS, and longer if a fault is still being carried out then (a
    // broker restart can take a while): every planned fault happens under load.
    await Promise.all([sleep(options.seconds * 1000), faults.injected.then(() => sleep(3000))]);
    loadStopped = true;
    clearInterval(progress);
    log('load stops; waiting for requests in flight and the last recovery measurements');
    await load.stop();
    await faults.settled;
    await outagesOver;
    const loadEndedAt = Date.now();

    // ---- drain ------------------------------------------------------------------------------
    await sandbox.clearFaults().catch(() => undefined);
    for (const role of ROLES) if (!supervisor.isRunning(role)) supervisor.restart(role);
    const ackedCommands = new Set(
      load.state.webhooks
        .filter((h) => h.ackAt !== undefined && h.commandId)
        .map((h) => h.commandKey ?? h.commandId!),
    );
    log(`draining (up to ${options.drainSeconds} s): outbox, commands, sandbox webhooks`);
    const drainDeadline = Date.now() + options.drainSeconds * 1000;
    let settledFor = 0;
    let lastStatus = '';
    while (Date.now() < drainDeadline && settledFor < 3) {
      await sleep(1000);
      try {
        const unpublished =
          (await scalar('SELECT count(*) AS v FROM outbox WHERE published_at IS NULL')) ?? 0;
        const { rows } = await pool.query<{ source: string; command_id: string; state: string }>(
          'SELECT source, command_id, state FROM commands',
        );
        const states = new Map(rows.map((r) => [commandKey(r.source, r.command_id), r.state]));
        const open = rows.filter((r) => !FINAL_STATES.has(r.state)).length;
        const missing = [...ackedCommands].filter((id) => !states.has(id)).length;
        const deliveries = await sandbox.webhooks();
        const pendingDeliveries = deliveries.filter((d) => d.status === 'pending').length;
        lastStatus = `unpublished ${unpublished}, commands open ${open}, acknowledged commands not seen by a consumer ${missing}, sandbox webhooks pending ${pendingDeliveries}`;
        settledFor =
          unpublished === 0 && open === 0 && missing === 0 && pendingDeliveries === 0 ? settledFor + 1 : 0;
      } catch (error) {
        lastStatus = `drain check failed: ${(error as Error).message}`;
        settledFor = 0;
      }
    }
    const drainMs = Date.now() - loadEndedAt;
    log(
      `${settledFor >= 3 ? 'settled' : 'drain timed out'} after ${(drainMs / 1000).toFixed(1)} s: ${lastStatus}`,
    );

    const callbacksSettle = await settleCallbacks(
      scalar,
      Object.keys(callbackSecrets),
      options.callbackSettleSeconds,
    );
    log(callbacksSettle);

    // ---- evidence and verdict ---------------------------------------------------------------
    const physical = await readTopics(
      kafka.brokers,
      allTopics().map((t) => `${PREFIX}${t}`),
    );
    const topics = new Map([...physical].map(([t, list]) => [t.slice(PREFIX.length), list]));
    const compaction = options.compaction
      ? await measureCompaction({
          brokers: kafka.brokers,
          topics,
          read: (t) => readTopics(kafka.brokers, t),
          log,
        })
      : undefined;
    const { rows: commandRows } = await pool.query<{ source: string; command_id: string; state: string }>(
      'SELECT source, command_id, state FROM commands',
    );
    // Keyed as the load keys its commands: the id, with the source when not the primary one.
    const commandStates = new Map(commandRows.map((r) => [commandKey(r.source, r.command_id), r.state]));
    const { writes: ledger } = await sandbox.ledger();
    const deliveries = await sandbox.webhooks();
    const { rows: attemptRows } = await pool.query<{
      kind: string;
      result: string | null;
      status: number | null;
      code: string | null;
      n: string;
    }>(
      `SELECT kind, coalesce(result, '(none)') AS result, status, code, count(*) AS n
         FROM command_attempts GROUP BY 1, 2, 3, 4 ORDER BY count(*) DESC`,
    );
    // Each fault's window: from its start to 5 s after its end, cut where the next server fault
    // or storm starts, so that one's effects are not counted as the other's.
    const serialStarts = injector.records.filter((f) => !f.kind.startsWith('kill:')).map((f) => f.startAt);
    for (const f of injector.records) {
      const next = serialStarts.find((t) => t > f.startAt) ?? Infinity;
      f.windowEndAt = Math.min((f.endAt ?? f.startAt) + 5000, Math.max(next, f.endAt ?? f.startAt));
    }
    const guardDuring: string[] = [];
    for (const f of injector.records) {
      const { rows } = await pool.query<{
        kind: string;
        result: string;
        status: number | null;
        code: string | null;
        n: string;
      }>(
        `SELECT kind, coalesce(result, '(none)') AS result, status, code, count(*) AS n FROM command_attempts
          WHERE started_at BETWEEN to_timestamp($1 / 1000.0) AND to_timestamp($2 / 1000.0)
          GROUP BY 1, 2, 3, 4 ORDER BY count(*) DESC`,
        [f.startAt, f.windowEndAt],
      );
      guardDuring.push(
        rows
          .map(
            (r) =>
              `${r.kind} ${r.result}${r.status ? ` ${r.status}` : ''}${r.code ? ` ${r.code}` : ''} ×${r.n}`,
          )
          .join('; '),
      );
    }
    const customersAfter = await sandbox.records('customers');
    const callbacks = analyseCallbacks({
      topics,
      received: [...callbackEndpoint.received],
      sources: Object.keys(callbackSecrets),
      outages,
      t0,
    });
    const { rows: refused } = await pool.query<{ request_id: string }>(
      `SELECT request_id FROM command_attempts WHERE kind = 'write' AND status IN (403, 404)`,
    );
    const analysis = analyse({
      load: load.state,
      topics,
      commandStates,
      ledger,
      deliveries,
      customers: customersAfter,
      refusalsSeen: new Set(refused.map((r) => r.request_id)),
    });
    analysis.checks.push(...callbacks.checks);
    callbacks.figures['callbacks settled'] = callbacksSettle;
    // Late writes (issue 13): what the storm injected, what the ledger says came of it, and the
    // time an ambiguous write (time-out, 5xx) added: from its end to the command's next write or
    // its final state.
    const { rows: ambiguous } = await pool.query<{
      n: string;
      avg: number | null;
      p50: number | null;
      max: number | null;
    }>(
      `WITH w AS (
         SELECT a.finished_at AS ended,
                coalesce((SELECT min(b.started_at) FROM command_attempts b
                           WHERE b.source = a.source AND b.command_type = a.command_type
                             AND b.command_id = a.command_id AND b.kind = 'write' AND b.attempt > a.attempt),
                         c.finished_at) AS next
           FROM command_attempts a JOIN commands c USING (source, command_type, command_id)
          WHERE a.kind = 'write' AND a.result IN ('uncertain', 'interrupted'))
       SELECT count(*) AS n,
              avg(extract(epoch FROM next - ended)) * 1000 AS avg,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM next - ended)) * 1000 AS p50,
              max(extract(epoch FROM next - ended)) * 1000 AS max
         FROM w WHERE next IS NOT NULL AND ended IS NOT NULL`,
    );
    const perCommand = [...analysis.appliedByLedger.values()];
    const lateWrites = {
      'payments hidden from enrollment records': options.hidePayments ? 'yes' : 'no',
      'client time-out (ms)': CHAOS_CLIENT_TIMEOUT_MS,
      'processing bound, sandbox and guard (ms)': CHAOS_MAX_PROCESSING_MS,
      'commands sent': load.state.commands.size,
      'late writes injected': injector.late.injected,
      '… within the bound (landed after the time-out)': injector.late.withinBound,
      '… past the bound (503, dropped)': injector.late.pastBound,
      'commands applied once (ledger)': perCommand.filter((n) => n === 1).length,
      'commands applied twice or more (ledger, goal 0)': perCommand.filter((n) => n > 1).length,
      'ambiguous writes (time-out, 5xx, interrupted)': Number(ambiguous[0]?.n ?? 0),
      'time added per ambiguous write, mean (ms)': Math.round(ambiguous[0]?.avg ?? 0),
      'time added per ambiguous write, median (ms)': Math.round(ambiguous[0]?.p50 ?? 0),
      'time added per ambiguous write, max (ms)': Math.round(ambiguous[0]?.max ?? 0),
    };
    // Reconcile the whole run against the platform (issue 45): applied confirmed, parked settled or explained.
    log('reconciling the run against the platform');
    const reconciled = await reconcileAtEnd({
      repoRoot,
      env,
      since: t0,
      pool,
      hidePayments: options.hidePayments,
    });
    analysis.checks.push(...reconciled.checks);
    log(`reconcile: ${JSON.stringify(reconciled.figures)}`);
    // After the evidence is read: its webhooks are not part of the load the invariants check.
    log('hostile phase: burst, near-limit bodies, odd paths, long ids, non-JSON ops bodies');
    const hostile = await runHostilePhase({
      receiverUrl,
      pmsSecret,
      opsToken: env.OPS_TOKEN!,
      unpublished: async () =>
        (await scalar('SELECT count(*) AS v FROM outbox WHERE published_at IS NULL AND parked_at IS NULL')) ??
        0,
      log,
    });
    log(`hostile phase: ${JSON.stringify(hostile)}`);
    const figures: ChaosFigures = computeFigures({
      load: load.state,
      analysis,
      commandStates,
      ledger,
      deliveries,
      faults: injector.records,
      guardDuring,
      unexpectedExits: supervisor.unexpectedExits(),
      attemptResults: attemptRows.map((r) => ({ ...r, result: r.result ?? '(none)', n: Number(r.n) })),
      run: {
        date: new Date(t0).toISOString(),
        seed: options.seed,
        'load (s)': Number(((loadEndedAt - t0) / 1000).toFixed(1)),
        'rate (events/s)': options.rate,
        'drain (s)': Number((drainMs / 1000).toFixed(1)),
        'settled before the drain limit': settledFor >= 3 ? 'yes' : `no (${lastStatus})`,
        'load started at (ms)': t0,
        'hostile requests': hostile.requests,
        'hostile 5xx': hostile.fiveXx,
        'drain after the 20 × 250 KB burst (s)':
          hostile.burstDrainMs === null
            ? 'not drained in 120 s'
            : Number((hostile.burstDrainMs / 1000).toFixed(1)),
        'receiver RSS before / after the hostile phase (MB)': `${hostile.rssBeforeMb ?? '?'} / ${hostile.rssAfterMb ?? '?'}`,
      },
    });
    figures.compaction = compaction;

    // ---- shut down and check nothing is left ------------------------------------------------
    const left = await cleanup(resources);
    const noneLeft = {
      name: 'no process left running',
      ok: left.length === 0,
      checked: supervisor.allPids().length + 2,
      failures: left,
      failureCount: left.length,
    };
    analysis.checks.push(noneLeft);
    const lateMarkdown = [
      '### Late writes',
      '',
      '| figure | value |',
      '|---|---|',
      ...Object.entries(lateWrites).map(([k, v]) => `| ${k} | ${v} |`),
      '',
      '### Outcome callbacks',
      '',
      '| figure | value |',
      '|---|---|',
      ...Object.entries(callbacks.figures).map(([k, v]) => `| ${k} | ${v} |`),
    ].join('\n');
    console.log(`\n${figuresMarkdown(figures, analysis.checks)}\n\n${lateMarkdown}\n`);
    for (const c of analysis.checks.filter((x) => !x.ok)) {
      console.log(`FAILED: ${c.name} (${c.failureCount})`);
      for (const f of c.failures) console.log(`  - ${f}`);
    }
    writeFileSync(
      join(artifacts, 'figures.json'),
      JSON.stringify({ figures, lateWrites, callbacks: callbacks.figures, checks: analysis.checks }, null, 2),
    );
    if (options.writeDocs) await writeDocs(`${figuresMarkdown(figures, analysis.checks)}\n\n${lateMarkdown}`);
    const failed = analysis.checks.filter((c) => !c.ok);
    log(failed.length === 0 ? 'every invariant held' : `${failed.length} invariant(s) failed`);
    return failed.length === 0 ? 0 : 1;
  } finally {
    const left = await cleanup(resources);
    if (left.length > 0) console.error(`left running: ${left.join(', ')}`);
  }
}

/**
 * After the drain: waits until every finished command of a source with callbacks has a delivered
 * callback and none is pending, three checks in a row (the callbacks role may have been killed
 * late, and its intake rejoins its group only when Kafka gives up on the dead member). Returns
 * how it ended, for the figures; the invariants then check against Kafka itself.
 */
async function settleCallbacks(
  scalar: (sql: string, params?: unknown[]) => Promise<number | null>,
  sources: string[],
  limitSeconds: number,
): Promise<string> {
  const begun = Date.now();
  let settledFor = 0;
  let status = '';
  while (Date.now() - begun < limitSeconds * 1000 && settledFor < 3) {
    await sleep(1000);
    try {
      const pending =
        (await scalar(`SELECT count(*) AS v FROM callback_deliveries WHERE state <> 'delivered'`)) ?? 0;
      const undelivered =
        (await scalar(
          `SELECT count(*) AS v FROM commands c
            WHERE c.source = ANY($1) AND c.state = ANY($2)
              AND NOT EXISTS (SELECT 1 FROM callback_deliveries d
                               WHERE d.source = c.source AND d.command_id = c.command_id AND d.state = 'delivered')`,
          [sources, [...FINAL_STATES]],
        )) ?? 0;
      status = `callbacks not delivered ${pending}, finished commands without a delivered callback ${undelivered}`;
      settledFor = pending === 0 && undelivered === 0 ? settledFor + 1 : 0;
    } catch (error) {
      status = `callback settle check failed: ${(error as Error).message}`;
      settledFor = 0;
    }
  }
  const took = ((Date.now() - begun) / 1000).toFixed(1);
  return `${settledFor >= 3 ? 'settled' : 'not settled'} after ${took} s (${status})`;
}

const START = '<!-- chaos:figures:start -->';
const END = '<!-- chaos:figures:end -->';

/**
 * Replaces the generated block of docs/chaos.md (the hand-written text around it stays), then
 * formats the file as `npm run lint` expects.
 */
async function writeDocs(markdown: string): Promise<void> {
  const path = join(repoRoot, 'docs', 'chaos.md');
  const block = `${START}\n\n## Figures of the last run\n\n${markdown}\n\n${END}`;
  const current = existsSync(path) ? readFileSync(path, 'utf8') : `# Chaos run\n\n${START}\n${END}\n`;
  const next =
    current.includes(START) && current.includes(END)
      ? current.slice(0, current.indexOf(START)) + block + current.slice(current.indexOf(END) + END.length)
      : `${current.trimEnd()}\n\n${block}\n`;
  const config = (await prettier.resolveConfig(path)) ?? {};
  writeFileSync(path, await prettier.format(next, { ...config, parser: 'markdown' }));
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('chaos run failed:', error);
    process.exit(2);
  },
);
