/**
 * Whether a Partner API error may be retried (spec 7.2, 7.4, 8) — read from the one classification
 * of failures (failure-classes.ts), which the guard reads too — and the back-off between attempts. "Retriable" means a GET may be repeated automatically; writes
 * are never repeated by the client (only the guarded write decides, after a read-back), except
 * that a 401 renews the token and repeats once, because a 401 was not applied.
 */

import { backoffDelay } from '../backoff.js';
import { classByStatus, type Retry } from './failure-classes.js';

export type { Retry } from './failure-classes.js';
export { retryFor } from './failure-classes.js';

/** By status, for unknown codes: 401 renews, 408/429/5xx retry, any other 4xx does not. */
export function retryByStatus(status: number): Retry {
  return classByStatus(status).retry;
}

/** Five attempts in all (spec 8, "give up after five attempts"). */
export const MAX_ATTEMPTS = 5;
/** No wait exceeds a minute (spec 8). */
export const MAX_WAIT_MS = 60_000;

/**
 * Wait before the next attempt (attempt = the one that just failed, 1-based).
 * 429: `Retry-After`, then doubled each time plus up to one second of jitter, capped at 60 s
 * (spec 8). 5xx / network / time-out: 0.5 s doubled plus jitter, same cap.
 */
export function backoffMs(
  attempt: number,
  failure: { throttled: boolean; retryAfterSeconds?: number },
  random: () => number = Math.random,
): number {
  if (failure.throttled) {
    const base = Math.max(1, failure.retryAfterSeconds ?? 1) * 1000;
    // The first wait is exactly Retry-After; later ones never less than what the API asked for.
    const grown = backoffDelay(
      { initialRetryTime: base, maxRetryTime: Number.POSITIVE_INFINITY, jitterMs: attempt > 1 ? 1000 : 0 },
      attempt,
      random,
    );
    return Math.min(MAX_WAIT_MS, Math.max(grown, (failure.retryAfterSeconds ?? 0) * 1000));
  }
  return backoffDelay({ initialRetryTime: 500, maxRetryTime: MAX_WAIT_MS, jitterMs: 1000 }, attempt, random);
}
