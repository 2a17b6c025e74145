import type { FailureInfo, FailureKind, MachineLimits } from '../../src/guard/machine/guard-machine.js';
import type { CommandRecord } from '../../src/guard/machine/command-record.js';
import type { ReadContext } from '../../src/guard/read-backs/read-back.js';

/**
 * The guard's test fixtures, shared by the machine's table and property tests and the read-back
 * tests: the limits of the table tests, failures as `classifyFailure` gives them, a command row,
 * a 503, a read context.
 */

/** The table tests' limits (read retries and the lock wait left to the machine's defaults). */
export const LIMITS: MachineLimits = {
  maxRetries: 2,
  maxLockRetries: 2,
  maxThrottles: 2,
  backoffMs: 100,
  maxBackoffMs: 1000,
  readBackDelayMs: 1000,
  maxProcessingMs: 30_000,
};

/** The property tests' limits: a simulated world with a 3 s processing bound. */
export const WALK_LIMITS: MachineLimits = {
  maxRetries: 3,
  maxLockRetries: 3,
  maxThrottles: 3,
  backoffMs: 100,
  maxBackoffMs: 2000,
  readBackDelayMs: 200,
  maxProcessingMs: 3000,
};

/** A failure of `kind`: by default a 500 whose code and message are its kind, no request id. */
export function failureInfo(kind: FailureKind, overrides: Partial<FailureInfo> = {}): FailureInfo {
  return {
    kind,
    code: kind,
    status: 500,
    message: kind,
    error: null,
    requestId: null,
    retryAfterSeconds: null,
    ...overrides,
  };
}

/** A write whose answer never came: the client timed out. */
export const TIMED_OUT = failureInfo('uncertain', { code: 'timeout', status: null, message: 'timed out' });

/** The Partner API's 503, as the client throws it. */
export const UNAVAILABLE = Object.assign(new Error('503'), { status: 503, code: 'unavailable' });

/** The row of command `p-1` (source `s`, a rental payment), pending, never written. */
export function commandRecord(overrides: Partial<CommandRecord> = {}): CommandRecord {
  const at = new Date(0);
  return {
    source: 's',
    commandId: 'p-1',
    commandType: 'rental_payment',
    targetId: 't',
    state: 'pending',
    payload: { amount: 10, payment_id: 'p-1' },
    snapshot: null,
    attempts: 0,
    requestIdBase: 'p-1',
    requestIds: [],
    lastError: null,
    createdAt: at,
    updatedAt: at,
    finishedAt: null,
    ...overrides,
  };
}

/** A read-back's context: each read a new random id. */
export const ctx: ReadContext = { nextReadId: () => `rb-${Math.random().toString(36).slice(2)}` };

/** A few milliseconds, so that the next write has a later timestamp. */
export const tick = () => new Promise((r) => setTimeout(r, 5));

/**
 * The owners of one command row, one after another as after crashes: `owner` runs one until it
 * finishes (its final state) or dies (null); after a death, `afterDeath` moves the clock and says
 * whether another owner takes the row over (if not, the walk ends unfinished: null).
 */
export function ownersInTurn<S>(owner: () => S | null, afterDeath: () => boolean): S | null {
  for (;;) {
    const final = owner();
    if (final) return final;
    if (!afterDeath()) return null;
  }
}
