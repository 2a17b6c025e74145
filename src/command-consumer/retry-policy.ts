import { classifyFailure } from '../guard/classify-failure.js';
import { GuardInterruptedError } from '../guard/index.js';
import { PartnerError } from '../partner/errors.js';

/**
 * Which failures of a command the consumer tries again later, and which surface as bugs.
 *
 * Retried: what the world did not answer, where the row keeps its state and a later try is safe:
 * - the guard could not decide (GuardInterruptedError: a read failed, the lock is held elsewhere);
 * - a Partner API failure of a step (the registration's check, an outcome's look-up) that the
 *   failure classification (src/guard/classify-failure.ts, src/partner/failure-classes.ts) does
 *   not call a refusal: throttled, uncertain (5xx, time-out, network), lock_failed, 401;
 * - PostgreSQL or Kafka away (connection refused or lost, a pool or request time-out, a
 *   serialization failure).
 *
 * Everything else is a bug (a TypeError, a refusal a step did not expect, ...): it is not retried
 * in a loop that would hide it. It leaves the message handler, so the offset is not committed,
 * kafkajs restarts the consumer on the same message, and /readyz reports the consumer
 * crash-looping (decision 021) until the code is fixed.
 */
export function isRetriable(error: unknown): boolean {
  if (error instanceof GuardInterruptedError) return true;
  if (error instanceof PartnerError) {
    const kind = classifyFailure(error).kind;
    return kind !== 'rejected' && kind !== 'invalid_state';
  }
  return isInfrastructureFailure(error);
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

function isInfrastructureFailure(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const { name, message } = e;
    const code = (e as { code?: unknown }).code;
    // kafkajs's errors: the broker or the connection, never our code.
    if (name.startsWith('KafkaJS')) return true;
    if (name === 'PrismaClientInitializationError') return true;
    if (typeof code === 'string') {
      if (NETWORK_CODES.has(code) || TRANSIENT_PRISMA.test(code)) return true;
      if (name !== 'TypeError' && TRANSIENT_SQLSTATE.test(code) && code.length === 5) return true;
    }
    // node-postgres (the command locks' connections) names a lost connection only in words.
    if (
      /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(
        message,
      )
    )
      return true;
  }
  return false;
}
