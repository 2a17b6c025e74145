/**
 * When a failed callback is tried again: exponential back-off with full jitter (the wait after
 * failure n is drawn uniformly from [0, min(maxDelayMs, initialMs · 2^(n−1))]), so that many
 * deliveries failing together (an endpoint down) do not come back in step. A delivery whose next
 * attempt would fall past `spanMs` after its retry span began is dead instead (a dead letter).
 */
export interface RetrySchedule {
  initialMs: number;
  maxDelayMs: number;
  spanMs: number;
}

/** The wait after failure `failures` (1-based), ms. */
export function retryDelay(
  schedule: RetrySchedule,
  failures: number,
  random: () => number = Math.random,
): number {
  // 2^40 is far past any cap: the exponent stops growing there (no Infinity).
  const grown = schedule.initialMs * 2 ** Math.min(Math.max(0, failures - 1), 40);
  return Math.floor(random() * Math.min(schedule.maxDelayMs, grown));
}

/** The next attempt's time after a failure, or null when the retry span has run out (dead). */
export function nextAttemptAt(
  schedule: RetrySchedule,
  retryFrom: Date,
  failures: number,
  now: Date = new Date(),
  random: () => number = Math.random,
): Date | null {
  const at = new Date(now.getTime() + retryDelay(schedule, failures, random));
  return at.getTime() - retryFrom.getTime() > schedule.spanMs ? null : at;
}
