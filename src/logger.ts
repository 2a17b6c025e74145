import { pino, type Logger, type LoggerOptions } from 'pino';
import { prettyDestination, type LogFormat } from './log-format.js';
import { maskText, maskValue, PERSONAL_FIELDS } from './personal-data.js';

export type { Logger };

/**
 * Keys whose values never reach a log line, at any depth: HTTP headers, request bodies, config
 * objects, serialized errors, child bindings. Matched by name (exactly as spelled here), not by
 * path, so a secret nested deeper than expected is censored all the same.
 *
 * Not pino's `redact` option: its paths are re-parsed on every line (@pinojs/redact 0.4), which
 * cost the receiver nearly a third of its throughput at the default level (bench/ingest.ts, 159 -> 232
 * us of CPU per acknowledged webhook). This walk costs one Set lookup per key.
 */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  'authorization',
  'x-access-token',
  'secret_key',
  'secretKey',
  'token',
  'accessToken',
  'secret',
  'secrets',
  'webhook_secret',
  'webhookSecret',
  'webhook-signature',
  'PARTNER_SECRET_KEY',
  'PARTNER_WEBHOOK_SECRETS',
  'PMS_WEBHOOK_SECRETS',
  'PMS_PARTNER_KEYS',
  'OPS_TOKEN',
  'OPS_OIDC_CLIENT_SECRET',
  'cookie',
  'set-cookie',
  'code_verifier',
  'METRICS_TOKEN',
  'DATABASE_URL',
]);

const CENSOR = '[redacted]';
/** Deeper than any object the code logs; a cycle ends here instead of looping. */
const MAX_DEPTH = 8;

const isPlain = (value: object) => {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
};

/** The object's own fields with secrets censored: the same object when it holds none (no copy). */
function redactFields<T extends object>(object: T, depth: number): T {
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(object)) {
    const value = (object as Record<string, unknown>)[key];
    const personal = PERSONAL_FIELDS[key];
    const next =
      SECRET_KEYS.has(key) && value !== undefined
        ? CENSOR
        : personal && (typeof value === 'string' || typeof value === 'number')
          ? maskValue(personal, value)
          : redactValue(value, depth + 1);
    if (next !== value) {
      copy ??= { ...(object as Record<string, unknown>) };
      copy[key] = next;
    }
  }
  return (copy as T | undefined) ?? object;
}

/**
 * Walks arrays and plain objects; errors are left to the `err` serializer, which redacts its output.
 * A personal value never reaches a line whole (decision 052): a field of src/personal-data.ts's
 * list is masked by its kind, an e-mail address in any text (a registration's Kafka key, an error
 * message) is masked where it stands; the `@` test keeps that to the few strings that may hold one.
 */
function redactValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return value.includes('@') ? maskText(value) : value;
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, i) => {
      const next = redactValue(item, depth + 1);
      if (next !== item) (copy ??= [...value])[i] = next;
    });
    return copy ?? value;
  }
  return isPlain(value) ? redactFields(value, depth) : value;
}

/** A log line's fields, secrets censored; the caller's objects are never changed. */
export const redactSecrets = <T extends object>(fields: T): T => redactFields(fields, 0);

const errors = (error: Error) => redactSecrets(pino.stdSerializers.err(error));

/** The one root logger; every component logs through a child carrying its ids. */
export function createLogger(
  options: { level?: string; name?: string; format?: LogFormat } = {},
  given?: pino.DestinationStream,
): Logger {
  // Readable lines for a person at a terminal (src/log-format.ts); JSON everywhere else.
  const destination = given ?? (options.format === 'pretty' ? prettyDestination() : undefined);
  const opts: LoggerOptions = {
    name: options.name ?? 'rentbridge',
    level: options.level ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }), log: redactSecrets },
    serializers: { err: errors, error: errors },
  };
  const root = destination ? pino(opts, destination) : pino(opts);
  // pino applies `formatters.bindings` to the root's bindings only: children (which inherit this
  // `child` through their prototype) get theirs censored here.
  const child = root.child;
  root.child = function (this: Logger, bindings, options) {
    return child.call(this, redactSecrets(bindings), options);
  } as typeof child;
  return root;
}

/**
 * A line that would repeat once per request at `info` (a command final, a slot taken after
 * waiting, an outcome callback received), summarised (issue 41: under steady traffic such lines
 * scrolled `npm start`'s banner off the screen within seconds). The caller logs each occurrence
 * at `debug`; this counts them and, a minute after the first one of a window, writes ONE `info`
 * line with the count, the count per label and the largest of each measure given.
 */
export interface LogSummary {
  /**
   * One occurrence: `label` is counted apart (`applied=12 rejected=2`); `largest` keep their
   * maximum over the window, `sums` their total.
   */
  add(label?: string, largest?: Record<string, number>, sums?: Record<string, number>): void;
  /** Writes the window's line now (when anything was counted) and starts a new window. */
  flush(): void;
}

export const SUMMARY_EVERY_MS = 60_000;

function createLogSummary(logger: Logger, message: string, everyMs: number): LogSummary {
  let total = 0;
  let byLabel = new Map<string, number>();
  let largest: Record<string, number> = {};
  let sums: Record<string, number> = {};
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (total === 0) return;
    const seconds = Math.round(everyMs / 1000);
    logger.info({ count: total, ...Object.fromEntries(byLabel), ...largest, ...sums, seconds }, message);
    total = 0;
    byLabel = new Map();
    largest = {};
    sums = {};
  };
  return {
    add(label, max, sum) {
      total += 1;
      if (label) byLabel.set(label, (byLabel.get(label) ?? 0) + 1);
      for (const [name, value] of Object.entries(max ?? {}))
        largest[name] = Math.max(largest[name] ?? value, value);
      for (const [name, value] of Object.entries(sum ?? {})) sums[name] = (sums[name] ?? 0) + value;
      if (!timer) {
        timer = setTimeout(flush, everyMs);
        // A summary never keeps a process alive; a line still counted at exit is lost (it was at debug).
        timer.unref();
      }
    },
    flush,
  };
}

const summaries = new WeakMap<Logger, Map<string, LogSummary>>();

/** The one summary of `message` for `logger` (the same logger and message: the same counts). */
export function logSummary(logger: Logger, message: string, everyMs = SUMMARY_EVERY_MS): LogSummary {
  let byMessage = summaries.get(logger);
  if (!byMessage) summaries.set(logger, (byMessage = new Map()));
  let summary = byMessage.get(message);
  if (!summary) byMessage.set(message, (summary = createLogSummary(logger, message, everyMs)));
  return summary;
}
