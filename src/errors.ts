/**
 * rentbridge's own errors: one class with the HTTP status and stable code it answers with (the
 * Partner API's error envelope, spec 7.1), and whether a retry may help. The Partner API's
 * errors are in src/partner/errors.ts.
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly retriable: boolean;
  /** Extra envelope fields, e.g. `errors` for validation_error. */
  readonly extra: Record<string, unknown>;

  constructor(
    status: number,
    code: string,
    message: string,
    options: { retriable?: boolean; cause?: unknown; extra?: Record<string, unknown> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.retriable = options.retriable ?? false;
    this.extra = options.extra ?? {};
  }
}

/** Turns anything thrown into an Error (for logs and envelopes). */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : JSON.stringify(thrown));
}

/** Bad usage or configuration of a command: the CLI exits with code 2 (docs/cli.md). */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * THE retry verdict (the kafkajs model): may a later try of the work that threw `error` succeed?
 * Retried by the one retrier that reads it (the command consumer: src/command-consumer/run-command.ts).
 *
 * - An error that says so decides: AppError, PartnerError (src/partner/errors.ts: a refusal that
 *   will stand is not retriable, anything else is), GuardInterruptedError (a read needed to decide
 *   failed, the lock is held elsewhere), a partial Kafka send. The first in the `cause` chain that
 *   says so decides, after ...
 * - ... what the world did not answer, which cannot say it itself: PostgreSQL or Kafka away
 *   (connection refused or lost, a pool or request time-out, a serialization failure).
 *
 * Everything else is a bug (a TypeError, a refusal a step did not expect, ...): it is not retried
 * in a loop that would hide it. It leaves the message handler, so the offset is not committed,
 * kafkajs restarts the consumer on the same message, and /readyz reports the consumer
 * crash-looping (decision 021) until the code is fixed.
 */
export function isRetriable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (isInfrastructureFailure(e)) return true;
    const said = (e as { retriable?: unknown }).retriable;
    if (typeof said === 'boolean') return said;
  }
  return false;
}

/** Node's socket errors: the peer is not there, or went away. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * PostgreSQL's SQLSTATE classes that say "try again": 08 connection exception, 53 insufficient
 * resources, 57 operator intervention (a shutdown, a cancelled statement), 40001/40P01
 * serialization failure and deadlock. Prisma's: P1xxx (cannot reach, timed out, closed), P2024
 * (pool time-out), P2034 (write conflict or deadlock).
 */
const TRANSIENT_SQLSTATE = /^(08|53|57)|^40001$|^40P01$/;
const TRANSIENT_PRISMA = /^P1\d{3}$|^P2024$|^P2034$/;
/** node-postgres (the command locks' connections) names a lost connection only in words. */
const LOST_PG_CONNECTION =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/;

/**
 * Prisma's driver adapters answer every failed raw query with P2010 ("Raw query failed") and keep
 * what PostgreSQL said in `meta.driverAdapterError.cause`: its `kind` (DatabaseNotReachable,
 * ConnectionClosed, ...) and its SQLSTATE as `originalCode` (57P03 while a crashed server
 * recovers).
 */
const TRANSIENT_ADAPTER_KINDS = new Set([
  'DatabaseNotReachable',
  'SocketTimeout',
  'ConnectionClosed',
  'TransactionWriteConflict',
  'TooManyConnections',
]);

function isTransientAdapterFailure(e: Error): boolean {
  const cause = (
    e as { meta?: { driverAdapterError?: { cause?: { kind?: unknown; originalCode?: unknown } } } }
  ).meta?.driverAdapterError?.cause;
  if (!cause) return false;
  if (typeof cause.kind === 'string' && TRANSIENT_ADAPTER_KINDS.has(cause.kind)) return true;
  const sqlstate = cause.originalCode;
  return typeof sqlstate === 'string' && sqlstate.length === 5 && TRANSIENT_SQLSTATE.test(sqlstate);
}

function isInfrastructureFailure(e: Error): boolean {
  const { name, message } = e;
  const code = (e as { code?: unknown }).code;
  if (isTransientAdapterFailure(e)) return true;
  // kafkajs's errors: the broker or the connection, never our code (its "retries exhausted" too).
  if (name.startsWith('KafkaJS')) return true;
  if (name === 'PrismaClientInitializationError') return true;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || TRANSIENT_PRISMA.test(code)) return true;
    if (name !== 'TypeError' && TRANSIENT_SQLSTATE.test(code) && code.length === 5) return true;
  }
  return LOST_PG_CONNECTION.test(message);
}
