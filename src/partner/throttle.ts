import type { Logger } from '../logger.js';
import { metrics } from '../metrics.js';
import type { RateBudget } from './rate-budget-types.js';

/** What a 429 said (spec 8): `Retry-After` in seconds, `X-RateLimit-Reset`, and whose answer it was. */
export interface ThrottledAnswer {
  retryAfterSeconds?: number;
  rateLimitReset?: Date;
  requestId: string;
}

/** When the pause after a 429 ends: `Retry-After`, else `X-RateLimit-Reset`, else one second. */
export function pauseEnd(answer: Omit<ThrottledAnswer, 'requestId'>, now = Date.now()): Date {
  if (answer.retryAfterSeconds !== undefined) return new Date(now + answer.retryAfterSeconds * 1000);
  return answer.rateLimitReset ?? new Date(now + 1000);
}

/**
 * The one place a 429 is handled (decision 033): counted, logged once, and written into the shared
 * budget, so no process on the egress IP takes a slot before the pause ends (the budget is the
 * single owner of the pause; a consumer or the guard waits for it by waiting for a slot). Called by
 * the transport only. Returns when the pause ends.
 */
export async function onThrottled(
  answer: ThrottledAnswer,
  deps: { budget?: Pick<RateBudget, 'pauseUntil'> | undefined; log: Logger },
): Promise<Date> {
  metrics.throttled.inc();
  const until = pauseEnd(answer);
  deps.log.warn(
    {
      partnerRequestId: answer.requestId,
      pausedUntil: until.toISOString(),
      shared: deps.budget !== undefined,
    },
    'partner api throttled',
  );
  if (deps.budget) await deps.budget.pauseUntil(until);
  return until;
}
