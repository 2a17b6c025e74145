/**
 * The one classification of Partner API failures (spec 7.2, 7.4, 8), read two ways:
 *
 * - `retryFor` — the client's view: may a GET be repeated automatically, or the token renewed
 *   (src/partner/transport.ts, through retry-policy.ts);
 * - `failureKind` — the guard's view: what a failed write means for the command
 *   (src/guard/machine/guard-machine.ts).
 *
 * One table by code (with the statuses the spec answers it with) and one rule by status for the
 * codes the table does not know (spec 7.2: "Unknown codes are handled by HTTP status"). It lives in
 * src/partner because the guard may import the client's layer, never the reverse.
 */

/** The client's view: repeat the request, renew the token and repeat once, or give up. */
export type Retry = 'retry' | 'renew_token' | 'no';

/** The guard's view of a failed write. */
export type FailureKind =
  /** 429: not applied (spec 7.4.2); wait Retry-After for the whole consumer, then write again. */
  | 'throttled'
  /** 401 that survived the client's own token renewal: not applied. */
  | 'unauthenticated'
  /** 409 invalid_state_transition: settle by reading the record's state. */
  | 'invalid_state'
  /** 409 lock_failed: read again and retry, bounded. */
  | 'lock_failed'
  /** Any other 4xx: the partner refused it; no retry. */
  | 'rejected'
  /** 5xx, time-out, network error, anything unknown: may have been applied; read back. */
  | 'uncertain';

export interface CodeClass {
  /** The statuses spec 7.2 answers the code with. */
  statuses: readonly number[];
  /** The client's view, whatever the status (a status that says retry still wins: see `retryFor`). */
  retry: Retry;
  /** The guard's view, when the code comes with one of its `statuses`; otherwise the status decides. */
  kind: FailureKind;
}

/** By code (spec 7.2). A code not listed here is handled by its HTTP status (spec 7.2, last line). */
export const FAILURES_BY_CODE: Readonly<Record<string, CodeClass>> = {
  validation_error: { statuses: [400, 422], retry: 'no', kind: 'rejected' },
  invalid_request_body: { statuses: [400], retry: 'no', kind: 'rejected' },
  bad_request: { statuses: [400], retry: 'no', kind: 'rejected' },
  unauthenticated: { statuses: [401], retry: 'renew_token', kind: 'unauthenticated' },
  processor_card_error: { statuses: [402], retry: 'no', kind: 'rejected' },
  forbidden: { statuses: [403], retry: 'no', kind: 'rejected' },
  not_found: { statuses: [404], retry: 'no', kind: 'rejected' },
  method_not_allowed: { statuses: [405], retry: 'no', kind: 'rejected' },
  invalid_state_transition: { statuses: [409], retry: 'no', kind: 'invalid_state' },
  // The record changed under the request: the caller reads again and decides (spec 7.2).
  lock_failed: { statuses: [409], retry: 'no', kind: 'lock_failed' },
  rate_limited: { statuses: [429], retry: 'retry', kind: 'throttled' },
  api_error: { statuses: [500], retry: 'retry', kind: 'uncertain' },
  request_timeout: { statuses: [503], retry: 'retry', kind: 'uncertain' },
};

/**
 * By status, for unknown codes (and for a known code with a status it does not belong to):
 * 401 renews / unauthenticated; 429 retries / throttled; 5xx retry / uncertain; 408 retries (the
 * client repeats a GET) but, for a write, is a refusal like any other 4xx; other 4xx: no /
 * rejected; a non-error status on an error object (e.g. a 3xx) is not understood: uncertain.
 */
export function classByStatus(status: number): { retry: Retry; kind: FailureKind } {
  if (status >= 500) return { retry: 'retry', kind: 'uncertain' };
  if (status === 429) return { retry: 'retry', kind: 'throttled' };
  if (status === 401) return { retry: 'renew_token', kind: 'unauthenticated' };
  if (status === 408) return { retry: 'retry', kind: 'rejected' };
  if (status >= 400) return { retry: 'no', kind: 'rejected' };
  return { retry: 'no', kind: 'uncertain' };
}

/** The client's view of a failed request. */
export function retryFor(status: number, code: string): Retry {
  // A status the code does not belong to (e.g. a 503 saying bad_request) is judged by status.
  const byCode = FAILURES_BY_CODE[code]?.retry;
  const byStatus = classByStatus(status).retry;
  if (byCode === undefined) return byStatus;
  if (byStatus === 'retry' && byCode === 'no') return 'retry';
  return byCode;
}

/** The guard's view of a failed write (`status` null: no HTTP answer, e.g. a network error). */
export function failureKind(status: number | null, code: string | null): FailureKind {
  if (status == null) return 'uncertain';
  const byCode = code == null ? undefined : FAILURES_BY_CODE[code];
  if (byCode?.statuses.includes(status)) return byCode.kind;
  return classByStatus(status).kind;
}

/**
 * A definitive answer that refuses the request (404 no such record, 409 a state it cannot move
 * from, 422 a field): a business outcome, logged as one. Authentication and permission,
 * throttling, a lock held, the platform's own errors and no answer at all are failures someone
 * may need to look at.
 */
export function isRefusal(status: number, code: string | null): boolean {
  if (status === 403) return false;
  const kind = failureKind(status, code);
  return kind === 'rejected' || kind === 'invalid_state';
}
