/**
 * The one back-off of rentbridge, in the shape kafkajs uses for its retrier (`initialRetryTime`,
 * `multiplier`, `maxRetryTime`, `factor`), used by the Partner API client
 * (src/partner/retry-policy.ts), the guard (src/guard/machine/guard-machine.ts, guarded-write.ts), the
 * command consumers and the relay. A leaf: it imports nothing.
 *
 * The wait after failure `n` (1-based; 0 counts as 1) is
 * `min(maxRetryTime, initialRetryTime · multiplier^(n−1) + jitterMs · r₁) · (1 + factor · (2·r₂ − 1))`:
 * grown, capped, then spread by ±factor (r₁, r₂ drawn from `random` only when used).
 */
export interface BackoffPolicy {
  /** The wait after the first failure, ms. */
  initialRetryTime: number;
  /** Each further failure multiplies the wait by this. Default 2. */
  multiplier?: number;
  /** No wait (before the spread) exceeds this, ms. */
  maxRetryTime: number;
  /** Spread of the capped wait, as a fraction of it (kafkajs's `factor`): ±factor. Default 0. */
  factor?: number;
  /** Up to this many ms added at random before the cap (the Partner API's jitter). Default 0. */
  jitterMs?: number;
  /** Failures past this many growths no longer grow the wait (an overflow guard). Default none. */
  maxGrowths?: number;
}

export function backoffDelay(
  policy: BackoffPolicy,
  failure: number,
  random: () => number = Math.random,
): number {
  const growths = Math.min(Math.max(0, failure - 1), policy.maxGrowths ?? Number.POSITIVE_INFINITY);
  const grown = policy.initialRetryTime * (policy.multiplier ?? 2) ** growths;
  const jitter = policy.jitterMs ? random() * policy.jitterMs : 0;
  const capped = Math.min(policy.maxRetryTime, grown + jitter);
  return policy.factor ? capped * (1 + policy.factor * (2 * random() - 1)) : capped;
}
