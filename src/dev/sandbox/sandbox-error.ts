/**
 * An error the sandbox answers with, in the Partner API's envelope (spec 7.1). `code` may be
 * undefined: a few legacy business-rule errors carry only `message` and `status`.
 */
export class SandboxError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string | undefined,
    message: string,
    options: { extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'SandboxError';
    this.status = status;
    this.code = code;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }
}

/** 400 validation_error with one message per failing parameter (spec 7.1). */
export function validationError(errors: string[], status = 400): SandboxError {
  return new SandboxError(status, 'validation_error', errors.join('; '), { extra: { errors } });
}

export function notFoundError(what = 'record'): SandboxError {
  return new SandboxError(404, 'not_found', `no such ${what}`);
}

export function invalidTransition(message: string): SandboxError {
  return new SandboxError(409, 'invalid_state_transition', message);
}

/** The envelope body for an error, with the request id equal to the `X-Request-Id` header. */
export function envelope(requestId: string, error: SandboxError): { error: Record<string, unknown> } {
  const body: Record<string, unknown> = { message: error.message, status: error.status };
  if (error.code !== undefined) body.code = error.code;
  body.request_id = requestId;
  return { error: { ...body, ...error.extra } };
}

/** The status that goes with a spec 7.2 code, for faults that name only a code. */
export const STATUS_OF_CODE: Record<string, number> = {
  validation_error: 400,
  invalid_request_body: 400,
  bad_request: 400,
  unauthenticated: 401,
  processor_card_error: 402,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  invalid_state_transition: 409,
  lock_failed: 409,
  rate_limited: 429,
  api_error: 500,
  request_timeout: 503,
};
