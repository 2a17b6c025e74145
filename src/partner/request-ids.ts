import { randomUUID } from 'node:crypto';

/** Spec 7.3: 1 to 128 characters of A-Z a-z 0-9 _ . - are kept; anything else is replaced. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * The `X-Request-Id` a call sends (spec 7.3): the caller's own when it follows the rule (1 to 128
 * characters of A-Z a-z 0-9 _ . -), so ids derived from a command id travel unchanged; otherwise a
 * new UUID (the API would replace an invalid one anyway, and then the caller's id would be lost
 * silently).
 */
export function outgoingRequestId(requested?: string): string {
  return requested !== undefined && REQUEST_ID_PATTERN.test(requested) ? requested : randomUUID();
}

/** Makes a valid request id from any text, e.g. `decision:7f3c…` → `decision_7f3c…`, cut to 128. */
export function toRequestId(text: string): string {
  const cleaned = text.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 128);
  return cleaned.length > 0 ? cleaned : randomUUID();
}
