/**
 * Errors of the Partner API client: a shallow hierarchy with a `retriable` flag the retry loop
 * reads (decided by the table in retry-policy.ts), the request id the API answered with, and the
 * original failure as `cause`.
 */
export class PartnerError extends Error {
  readonly retriable: boolean;
  /** The id the API answered with (`X-Request-Id`), or the one sent when no answer came. */
  readonly requestId: string;

  constructor(message: string, options: { retriable: boolean; requestId: string; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = 'PartnerError';
    this.retriable = options.retriable;
    this.requestId = options.requestId;
  }
}

export interface PartnerApiErrorFields {
  status: number;
  /** The envelope's code; a missing code reads as `bad_request` (spec 7.1). */
  code: string;
  requestId: string;
  message: string;
  method: string;
  /** Path template of the endpoint, e.g. `POST /partner/v1/applications/{id}/approve`. */
  endpoint: string;
  /** validation_error: one string per failing parameter. */
  errors?: string[];
  /** customers/check failure: field → reason. */
  details?: Record<string, unknown>;
  /** api_error: unique to the failure. */
  errorId?: string;
  /** api_error: identical for repeats of the same underlying fault. */
  errorSignature?: string;
  processorCode?: string;
  processorDeclineCode?: string;
  /** 429: seconds from `Retry-After`. */
  retryAfterSeconds?: number;
  /** 429: `X-RateLimit-Reset`, when the window resets. */
  rateLimitReset?: Date;
}

/** The API answered with an error envelope (spec 7.1) or an unreadable non-2xx answer. */
export class PartnerApiError extends PartnerError {
  readonly status: number;
  readonly code: string;
  readonly method: string;
  readonly endpoint: string;
  readonly errors?: string[];
  readonly details?: Record<string, unknown>;
  readonly errorId?: string;
  readonly errorSignature?: string;
  readonly processorCode?: string;
  readonly processorDeclineCode?: string;
  readonly retryAfterSeconds?: number;
  readonly rateLimitReset?: Date;

  constructor(fields: PartnerApiErrorFields, options: { retriable: boolean; cause?: unknown }) {
    super(fields.message, {
      retriable: options.retriable,
      requestId: fields.requestId,
      cause: options.cause,
    });
    this.name = 'PartnerApiError';
    this.status = fields.status;
    this.code = fields.code;
    this.method = fields.method;
    this.endpoint = fields.endpoint;
    if (fields.errors !== undefined) this.errors = fields.errors;
    if (fields.details !== undefined) this.details = fields.details;
    if (fields.errorId !== undefined) this.errorId = fields.errorId;
    if (fields.errorSignature !== undefined) this.errorSignature = fields.errorSignature;
    if (fields.processorCode !== undefined) this.processorCode = fields.processorCode;
    if (fields.processorDeclineCode !== undefined) this.processorDeclineCode = fields.processorDeclineCode;
    if (fields.retryAfterSeconds !== undefined) this.retryAfterSeconds = fields.retryAfterSeconds;
    if (fields.rateLimitReset !== undefined) this.rateLimitReset = fields.rateLimitReset;
  }
}

/** No answer: connection refused or reset, DNS, TLS. A write may or may not have been applied. */
export class PartnerNetworkError extends PartnerError {
  constructor(message: string, options: { requestId: string; cause?: unknown }) {
    super(message, { retriable: true, requestId: options.requestId, cause: options.cause });
    this.name = 'PartnerNetworkError';
  }
}

/** No answer within the time-out. A write may have been applied (spec 7.4.3). */
export class PartnerTimeoutError extends PartnerError {
  readonly timeoutMs: number;

  constructor(message: string, options: { requestId: string; timeoutMs: number; cause?: unknown }) {
    super(message, { retriable: true, requestId: options.requestId, cause: options.cause });
    this.name = 'PartnerTimeoutError';
    this.timeoutMs = options.timeoutMs;
  }
}

/** The answer was 2xx but did not have the shape the client expects. Never retried. */
export class PartnerResponseError extends PartnerError {
  constructor(message: string, options: { requestId: string; cause?: unknown }) {
    super(message, { retriable: false, requestId: options.requestId, cause: options.cause });
    this.name = 'PartnerResponseError';
  }
}
