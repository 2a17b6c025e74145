import { pino, type Logger, type LoggerOptions } from 'pino';
import { prettyDestination, type LogFormat } from './log-format.js';

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
    const next = SECRET_KEYS.has(key) && value !== undefined ? CENSOR : redactValue(value, depth + 1);
    if (next !== value) {
      copy ??= { ...(object as Record<string, unknown>) };
      copy[key] = next;
    }
  }
  return (copy as T | undefined) ?? object;
}

/** Walks arrays and plain objects; errors are left to the `err` serializer, which redacts its output. */
function redactValue(value: unknown, depth: number): unknown {
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
