/**
 * How many callbacks a source may have in flight, adapted to its endpoint's answers (issue 43
 * item 3, docs/callbacks.md "Deliveries in flight"). Additive increase, multiplicative decrease,
 * as TCP's congestion window:
 *
 * - an answer as fast as the endpoint's usual (within twice its baseline plus a margin) raises
 *   the limit: by one per answer while no slowdown has been met yet (slow start: the limit doubles
 *   per round trip), then by one per limit's worth of answers;
 * - a slow answer (slower than that) lowers it by a quarter, down to the initial limit at least
 *   (the fixed CALLBACK_CONCURRENCY of before: slowness alone never gives an endpoint less); a
 *   failure (5xx, time-out, network error) halves it, down to `min`: a slowing endpoint gets
 *   fewer deliveries, a failing one fewer still, and the circuit breaker then stops it as before;
 * - the limit grows only while it is used (half of it in flight or more): a trickle does not
 *   earn a burst the right to a crowd it never tried;
 * - only a delivery sent after the last decrease can decrease it again: the answers of one
 *   crowded moment count once, and the limit never collapses on a burst of old answers;
 * - the baseline is the fastest answer of the last one to two `windowMs`: an endpoint slow by
 *   nature sets its own baseline and is not taken for one slowing down, and one that became
 *   slower for good is taken as it is now once a window has passed.
 *
 * The limit stays within [min, max]; max = min fixes it (no adaptation).
 */
export interface AdaptiveLimit {
  /** Deliveries that may be in flight now. */
  current(): number;
  /**
   * An answer of a delivery sent at `sentAt` (ms) that took `durationMs`, with `inFlight`
   * deliveries in flight when it came (itself included).
   */
  record(answer: { ok: boolean; durationMs: number; sentAt: number; inFlight: number }, now?: number): number;
}

export interface AdaptiveLimitOptions {
  /** The limit to start from (CALLBACK_CONCURRENCY). */
  initial: number;
  /** Never fewer (default 1). */
  min?: number;
  /** Never more (CALLBACK_MAX_CONCURRENCY). */
  max: number;
  /** An answer slower than 2 × baseline + this is slow. Default 250 ms: noise at small latencies, a busy event loop, a GC pause. */
  marginMs?: number;
  /** How long the fastest answer stays the baseline (one to two windows). Default 30 000 ms. */
  windowMs?: number;
}

export function createAdaptiveLimit(options: AdaptiveLimitOptions): AdaptiveLimit {
  const min = Math.max(1, options.min ?? 1);
  const max = Math.max(min, options.max);
  const marginMs = options.marginMs ?? 250;
  const windowMs = options.windowMs ?? 30_000;
  let limit = Math.min(max, Math.max(min, options.initial));
  let slowStart = true;
  let lastDecrease = -Infinity;
  // The fastest successful answer of this window and of the one before.
  let window = { start: -Infinity, fastest: Infinity };
  let previous = Infinity;
  const baseline = (now: number): number | null => {
    if (now - window.start >= windowMs) {
      previous = now - window.start < 2 * windowMs ? window.fastest : Infinity;
      window = { start: now, fastest: Infinity };
    }
    const b = Math.min(previous, window.fastest);
    return Number.isFinite(b) ? b : null;
  };

  const initial = Math.min(max, Math.max(min, options.initial));
  const decrease = (factor: number, floor: number, now: number) => {
    limit = Math.max(floor, Math.min(limit, Math.floor(limit * factor)));
    slowStart = false;
    lastDecrease = now;
  };

  return {
    current: () => Math.floor(limit),
    record({ ok, durationMs, sentAt, inFlight }, now = Date.now()) {
      const base = baseline(now);
      const slow = base !== null && durationMs > 2 * base + marginMs;
      if (ok) window.fastest = Math.min(window.fastest, durationMs);
      // Sent before the last decrease: its answer reflects the load that decrease already answered.
      const fresh = sentAt >= lastDecrease;
      if (!ok) {
        if (fresh) decrease(0.5, min, now);
      } else if (slow) {
        if (fresh) decrease(0.75, initial, now);
      } else if (inFlight >= limit / 2) {
        limit = Math.min(max, limit + (slowStart ? 1 : 1 / limit));
      }
      return Math.floor(limit);
    },
  };
}
