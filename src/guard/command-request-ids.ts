import { createHash } from 'node:crypto';

/**
 * The X-Request-Id of every Partner API call the guard makes is derived from the command id, so
 * the partner's logs, the sandbox ledger, our rows and the outcome all name the same attempt.
 * Spec 7.3 keeps an id of 1 to 128 characters of `A-Z a-z 0-9 _ . -` unchanged; anything else
 * would be replaced by a UUID, losing the link, so ids outside that charset or too long are
 * sanitized and suffixed with a hash of the original (two ids never collapse into one).
 */
const SAFE = /^[A-Za-z0-9_.-]+$/;
const MAX_BASE = 96;

export function requestIdBase(commandId: string): string {
  if (SAFE.test(commandId) && commandId.length <= MAX_BASE) return commandId;
  const hash = createHash('sha256').update(commandId).digest('hex').slice(0, 16);
  return `${commandId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, MAX_BASE - 17)}-${hash}`;
}

/** The id of write attempt `n` (1-based): `<command>.a<n>`. */
export function writeRequestId(commandId: string, attempt: number): string {
  return `${requestIdBase(commandId)}.a${attempt}`;
}

/** The id of the `k`-th read made around write attempt `n`: `<command>.a<n>.r<k>`. */
export function readRequestId(commandId: string, attempt: number, read: number): string {
  return `${requestIdBase(commandId)}.a${attempt}.r${read}`;
}
