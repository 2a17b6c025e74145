/** What a rate-limit check answers, with the values of the spec 8 headers. */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix time in seconds when the oldest counted request leaves the window. */
  resetAt: number;
  /** Seconds until a request would be allowed again (only meaningful when not allowed). */
  retryAfter: number;
}

/**
 * A rolling-window limiter per (bucket, source IP): the timestamps of the allowed requests of
 * the last window. A throttled request is not counted, so a client that honours `Retry-After`
 * gets through.
 */
export class RateLimiter {
  private readonly hits = new Map<string, number[]>();

  clear(): void {
    this.hits.clear();
  }

  take(bucket: string, ip: string, limit: number, windowMs: number, now = Date.now()): RateDecision {
    const id = `${bucket}|${ip}`;
    let times = this.hits.get(id);
    if (!times) {
      times = [];
      this.hits.set(id, times);
    }
    let expired = 0;
    while (expired < times.length && (times[expired] as number) <= now - windowMs) expired++;
    if (expired > 0) times.splice(0, expired);
    if (times.length >= limit) {
      const oldest = times[0] ?? now;
      const resetMs = oldest + windowMs;
      return {
        allowed: false,
        limit,
        remaining: 0,
        resetAt: Math.ceil(resetMs / 1000),
        retryAfter: Math.max(1, Math.ceil((resetMs - now) / 1000)),
      };
    }
    times.push(now);
    const resetMs = (times[0] ?? now) + windowMs;
    return {
      allowed: true,
      limit,
      remaining: limit - times.length,
      resetAt: Math.ceil(resetMs / 1000),
      retryAfter: 0,
    };
  }
}
