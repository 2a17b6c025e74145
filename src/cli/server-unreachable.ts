/**
 * A CLI command whose PostgreSQL or Kafka does not answer ends with one line naming the server,
 * its address and where that address came from, and exit 2 — not a driver's stack trace. After
 * Ctrl-C on `npm start` this is the normal state (the embedded PostgreSQL runs only while
 * `npm start` does), so it is said as plainly as a bad variable is.
 */

/** Codes of "nothing answers there" (refused, unresolvable, unreachable, timed out). */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  // Prisma: can't reach the database server; timed out reaching it; closed the connection.
  'P1001',
  'P1002',
  'P1017',
]);

interface Found {
  server: 'PostgreSQL' | 'Kafka';
}

/** Every error in a chain: `cause`, AggregateError's `errors`, kafkajs's `originalError`. */
function chain(error: unknown, seen = new Set<unknown>()): unknown[] {
  if (error == null || typeof error !== 'object' || seen.has(error)) return [];
  seen.add(error);
  const e = error as { cause?: unknown; errors?: unknown; originalError?: unknown };
  const nested = [e.cause, e.originalError, ...(Array.isArray(e.errors) ? e.errors : [])];
  return [error, ...nested.flatMap((n) => chain(n, seen))];
}

function codeOf(error: unknown): string | undefined {
  const e = error as { code?: unknown; errorCode?: unknown };
  if (typeof e.code === 'string') return e.code;
  if (typeof e.errorCode === 'string') return e.errorCode;
  return undefined;
}

function nameOf(error: unknown): string {
  const e = error as { name?: unknown; constructor?: { name?: string } };
  return typeof e.name === 'string' ? e.name : (e.constructor?.name ?? '');
}

/** What the CLI knows of its servers (src/config/config.ts). */
export interface ServerConfig {
  DATABASE_URL: string;
  KAFKA_BROKERS: readonly string[];
}

function portOf(address: string): number {
  return Number(address.slice(address.lastIndexOf(':') + 1));
}

/**
 * Which server did not answer, when `error` says one did not (null: some other failure, a
 * Partner API that does not answer among them: that one is told where it is called).
 */
export function unreachableServer(error: unknown, config: ServerConfig): Found | null {
  const all = chain(error);
  const kafka = all.some((e) => nameOf(e).startsWith('KafkaJS'));
  const prisma = all.some((e) => nameOf(e).startsWith('Prisma') || /^P1\d{3}$/.test(codeOf(e) ?? ''));
  const unreachable = all.some((e) => {
    const code = codeOf(e);
    if (code && UNREACHABLE_CODES.has(code)) return true;
    // kafkajs wraps a refused connection in KafkaJSConnectionError; Prisma's failure to connect at
    // all is an initialization error.
    const name = nameOf(e);
    if (name === 'KafkaJSConnectionError' || name === 'PrismaClientInitializationError') return true;
    // A raw query's failure to connect comes back as a request error without a code.
    return name.startsWith('Prisma') && /Can't reach database server/.test((e as Error).message ?? '');
  });
  if (!unreachable) return null;
  if (kafka) return { server: 'Kafka' };
  if (prisma) return { server: 'PostgreSQL' };
  // A bare socket error (pg's own client): told apart by the port it tried.
  const ports = all.map((e) => (e as { port?: unknown }).port).filter((p) => typeof p === 'number');
  const dbPort = Number(new URL(config.DATABASE_URL).port || 5432);
  if (ports.includes(dbPort)) return { server: 'PostgreSQL' };
  if (config.KAFKA_BROKERS.some((b) => ports.includes(portOf(b)))) return { server: 'Kafka' };
  return null;
}

/** `host:port` of a PostgreSQL URL (the URL's credentials are never shown). */
function pgAddress(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.hostname}:${url.port || '5432'}`;
  } catch {
    return 'the address in DATABASE_URL';
  }
}

/**
 * The line to print: which server, where, and where the address came from. `env` tells a set
 * variable from the default (the address `npm start`'s embedded servers use).
 */
export function unreachableLine(
  found: Found,
  config: ServerConfig,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (found.server === 'PostgreSQL') {
    const where = pgAddress(config.DATABASE_URL);
    return env.DATABASE_URL
      ? `PostgreSQL at ${where} (DATABASE_URL) does not answer: start it, or set DATABASE_URL to one that runs`
      : `PostgreSQL at ${where} (the default: DATABASE_URL is unset) does not answer: the embedded PostgreSQL runs only while \`npm start\` does; start it, or set DATABASE_URL`;
  }
  const where = config.KAFKA_BROKERS.join(',');
  return env.KAFKA_BROKERS
    ? `Kafka at ${where} (KAFKA_BROKERS) does not answer: start it, or set KAFKA_BROKERS to brokers that run`
    : `Kafka at ${where} (the default: KAFKA_BROKERS is unset) does not answer: the local Kafka runs only while \`npm start\` does; start it, or set KAFKA_BROKERS`;
}
