import { noAnswerCode, toOutcomeError, type OutcomeError } from '../../partner/errors.js';
import { failureKind, type FailureKind } from '../../partner/failure-classes.js';

/**
 * What a failed Partner API write means for the guard, read from the one classification of
 * failures the client reads too (src/partner/failure-classes.ts, spec 7.2, 7.4). The client's
 * errors are read structurally (`status`, `code`, `retryAfterSeconds`, `requestId`), so any
 * PartnerError shape works here.
 */
export type { FailureKind } from '../../partner/failure-classes.js';

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
    // No answer: a stable code of ours (timeout, network_error, ...), never a class name.
    code: code ?? (status == null ? noAnswerCode(error) : null),
    status,
    message: typeof e.message === 'string' ? e.message : String(error),
    requestId: typeof e.requestId === 'string' ? e.requestId : null,
    retryAfterSeconds: typeof e.retryAfterSeconds === 'number' ? e.retryAfterSeconds : null,
  };
  return { kind: failureKind(status, code), error: toOutcomeError(error), ...info };
}
