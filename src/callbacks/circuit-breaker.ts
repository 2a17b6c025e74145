/**
 * A circuit breaker per callback endpoint (as Convoy's): after `failureThreshold` failures in a
 * row the endpoint is `open`: nothing is sent to it for `cooldownMs`; then it is `half_open`: ONE
 * delivery probes it. A success closes it; a failed probe opens it again for twice the cooldown
 * (up to `maxCooldownMs`). An endpoint that keeps failing is probed, never hammered.
 */
export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerOptions {
  failureThreshold: number;
  cooldownMs: number;
  maxCooldownMs: number;
}

export interface CircuitBreaker {
  /** The state now (an open breaker whose cooldown has passed reads `half_open`). */
  state(now?: number): BreakerState;
  /** How many deliveries may be in flight now: `concurrency` closed, 1 half-open, 0 open. */
  allowance(concurrency: number, now?: number): number;
  /** When an open breaker lets a probe through (ms since epoch), else null. */
  probeAt(): number | null;
  consecutiveFailures(): number;
  /** Records an attempt's result; returns the state after it. */
  record(success: boolean, now?: number): BreakerState;
  /** Back to closed (the endpoint was configured again). */
  reset(): void;
}

export function createCircuitBreaker(options: BreakerOptions): CircuitBreaker {
  let failures = 0;
  let openUntil: number | null = null;
  let cooldown = options.cooldownMs;

  const state = (now = Date.now()): BreakerState =>
    openUntil === null ? 'closed' : now < openUntil ? 'open' : 'half_open';

  return {
    state,
    allowance(concurrency, now = Date.now()) {
      const s = state(now);
      return s === 'closed' ? concurrency : s === 'half_open' ? 1 : 0;
    },
    probeAt: () => openUntil,
    consecutiveFailures: () => failures,
    record(success, now = Date.now()) {
      const before = state(now);
      if (success) {
        failures = 0;
        openUntil = null;
        cooldown = options.cooldownMs;
        return 'closed';
      }
      failures += 1;
      if (before === 'half_open') {
        // The probe failed: wait longer before the next one.
        cooldown = Math.min(cooldown * 2, Math.max(options.maxCooldownMs, options.cooldownMs));
        openUntil = now + cooldown;
      } else if (before === 'closed' && failures >= options.failureThreshold) {
        openUntil = now + cooldown;
      }
      return state(now);
    },
    reset() {
      failures = 0;
      openUntil = null;
      cooldown = options.cooldownMs;
    },
  };
}
