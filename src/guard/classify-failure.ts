import { toOutcomeError, type OutcomeError } from '../partner/errors.js';

/**
 * What a failed Partner API write means for the guard, decided in one place from the status and
 * code (spec 7.2, 7.4). The client's errors are read structurally (`status`, `code`,
 * `retryAfterSeconds`, `requestId`), so any PartnerError shape works here.
 */
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

export interface FailureInfo {
  kind: FailureKind;
  /** The Partner API's error whole, as outcomes and dead letters carry it (null: not a PartnerError). */
  error: OutcomeError | null;
  code: string | null;
  status: number | null;
  message: string;
  requestId: string | null;
  retryAfterSeconds: number | null;
}

export function classifyFailure(error: unknown): FailureInfo {
  const e = (error ?? {}) as {
    status?: unknown;
    code?: unknown;
    message?: unknown;
    requestId?: unknown;
    retryAfterSeconds?: unknown;
    name?: unknown;
  };
  const status = typeof e.status === 'number' ? e.status : null;
  const code =
    typeof e.code === 'string'
      ? e.code
      : status != null && status >= 400 && status < 500
        ? 'bad_request'
        : null;
  const info = {
    code: code ?? (typeof e.name === 'string' ? e.name : null),
    status,
    message: typeof e.message === 'string' ? e.message : String(error),
    requestId: typeof e.requestId === 'string' ? e.requestId : null,
    retryAfterSeconds: typeof e.retryAfterSeconds === 'number' ? e.retryAfterSeconds : null,
  };
  return { kind: kindOf(status, code), error: toOutcomeError(error), ...info };
}

function kindOf(status: number | null, code: string | null): FailureKind {
  if (status == null || status >= 500) return 'uncertain';
  if (status === 429) return 'throttled';
  if (status === 401) return 'unauthenticated';
  if (status === 409 && code === 'invalid_state_transition') return 'invalid_state';
  if (status === 409 && code === 'lock_failed') return 'lock_failed';
  if (status >= 400) return 'rejected';
  // A non-error status on an error object (e.g. a 3xx) is not understood: treat as uncertain.
  return 'uncertain';
}
