import { failureKind } from './failure-classes.js';

/**
 * Errors of the Partner API client: a shallow hierarchy with two flags, the request id the API
 * answered with, and the original failure as `cause`.
 */
export class PartnerError extends Error {
  /** May the client repeat the request at once (a GET, spec 7.4.1; the table in retry-policy.ts)? */
  readonly repeatable: boolean;
  /**
   * May a later try of the work that made the call succeed? What rentbridge's one retry verdict
   * reads (`isRetriable`, src/errors.ts): false only for a refusal that will stand (a 4xx the
   * Partner API will answer again, an invalid state transition). No answer, a 429, a 5xx, a lock
   * held, a token refused, an answer not understood: a later try may succeed.
   */
  readonly retriable: boolean;
  /** The id the API answered with (`X-Request-Id`), or the one sent when no answer came. */
  readonly requestId: string;

  constructor(
    message: string,
    options: { repeatable: boolean; retriable?: boolean; requestId: string; cause?: unknown },
  ) {
    super(message, { cause: options.cause });
    this.name = 'PartnerError';
    this.repeatable = options.repeatable;
    this.retriable = options.retriable ?? true;
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
  /** The envelope had no `code` (a legacy business-rule error): `code` reads `bad_request` (spec 7.1). */
  codeMissing?: boolean;
  /** Envelope fields beyond those of spec 7.1 (a new code may add fields at any time, 7.2). */
  extra?: Record<string, unknown>;
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
  readonly codeMissing?: boolean;
  readonly extra?: Record<string, unknown>;
  readonly retryAfterSeconds?: number;
  readonly rateLimitReset?: Date;

  constructor(fields: PartnerApiErrorFields, options: { repeatable: boolean; cause?: unknown }) {
    const kind = failureKind(fields.status, fields.code);
    super(fields.message, {
      repeatable: options.repeatable,
      retriable: kind !== 'rejected' && kind !== 'invalid_state',
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
    if (fields.codeMissing) this.codeMissing = true;
    if (fields.extra !== undefined && Object.keys(fields.extra).length > 0) this.extra = fields.extra;
    if (fields.retryAfterSeconds !== undefined) this.retryAfterSeconds = fields.retryAfterSeconds;
    if (fields.rateLimitReset !== undefined) this.rateLimitReset = fields.rateLimitReset;
  }
}

/**
 * rentbridge's own codes for a failure without an answer from the Partner API, in the style of the
 * spec's (7.2), stable so that a client can branch on them: an outcome's `error.code` (status
 * null), a dead letter's `dlq-error-code`. Listed in docs/schemas/command-outcome.json and
 * docs/asyncapi.yaml. Never the implementation's class names.
 */
export const NO_ANSWER_CODES = {
  timeout: 'no answer within PARTNER_TIMEOUT_MS; the write may have been applied (spec 7.4.3)',
  network_error:
    'the Partner API could not be reached (connection refused or reset, DNS, TLS); the write may have been applied',
  invalid_response: 'a 2xx answer of a shape the client does not recognise',
  interrupted: "the process stopped (crash, kill, lost connection) before the write's answer was recorded",
  invalid_message: 'the command itself could not be read (not a CloudEvent, wrong type, fails its schema)',
  internal_error: 'rentbridge failed in its own code before an answer was recorded',
} as const;
export type NoAnswerCode = keyof typeof NO_ANSWER_CODES;
export const NO_ANSWER_CODE_LIST = Object.keys(NO_ANSWER_CODES) as [NoAnswerCode, ...NoAnswerCode[]];

/** The stable code of a failure the Partner API did not answer (anything but a PartnerApiError). */
export function noAnswerCode(error: unknown): NoAnswerCode {
  if (error instanceof PartnerTimeoutError) return 'timeout';
  if (error instanceof PartnerNetworkError) return 'network_error';
  if (error instanceof PartnerResponseError) return 'invalid_response';
  // Read by name too: errors crossing a module boundary (the probe's own) are not instances.
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'PartnerTimeoutError') return 'timeout';
  if (name === 'PartnerNetworkError') return 'network_error';
  if (name === 'PartnerResponseError') return 'invalid_response';
  return 'internal_error';
}

/** No answer: connection refused or reset, DNS, TLS. A write may or may not have been applied. */
export class PartnerNetworkError extends PartnerError {
  constructor(message: string, options: { requestId: string; cause?: unknown }) {
    super(message, { repeatable: true, requestId: options.requestId, cause: options.cause });
    this.name = 'PartnerNetworkError';
  }
}

/** No answer within the time-out. A write may have been applied (spec 7.4.3). */
export class PartnerTimeoutError extends PartnerError {
  readonly timeoutMs: number;

  constructor(message: string, options: { requestId: string; timeoutMs: number; cause?: unknown }) {
    super(message, { repeatable: true, requestId: options.requestId, cause: options.cause });
    this.name = 'PartnerTimeoutError';
    this.timeoutMs = options.timeoutMs;
  }
}

/** The answer was 2xx but did not have the shape the client expects. Never repeated at once. */
export class PartnerResponseError extends PartnerError {
  constructor(message: string, options: { requestId: string; cause?: unknown }) {
    super(message, { repeatable: false, requestId: options.requestId, cause: options.cause });
    this.name = 'PartnerResponseError';
  }
}

/** The envelope fields of spec 7.1, kept by name; any other field goes to `extra`. */
export const ENVELOPE_FIELDS = [
  'message',
  'status',
  'code',
  'request_id',
  'errors',
  'details',
  'error_id',
  'error_signature',
  'processor_code',
  'processor_decline_code',
] as const;

/** `extra` is kept only while its JSON fits in this many bytes; larger, it is cut to a note. */
export const ERROR_EXTRA_MAX_BYTES = 4096;

/** The envelope fields not named by spec 7.1, bounded to ERROR_EXTRA_MAX_BYTES of JSON. */
export function extraEnvelopeFields(envelope: Record<string, unknown>): Record<string, unknown> | undefined {
  const extra = Object.fromEntries(
    Object.entries(envelope).filter(([k]) => !(ENVELOPE_FIELDS as readonly string[]).includes(k)),
  );
  if (Object.keys(extra).length === 0) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify(extra));
  if (bytes <= ERROR_EXTRA_MAX_BYTES) return extra;
  return {
    _truncated: `${bytes} bytes of extra fields (${Object.keys(extra).join(', ').slice(0, 500)}) not kept`,
  };
}

/**
 * The Partner API's error as outcomes and dead letters carry it (docs/schemas/command-outcome.json
 * `error`): the envelope whole, in snake_case as the API gave it, so a back-office branches on
 * `code` (and `processor_decline_code`, `errors`, ...) rather than on the message.
 */
export interface OutcomeError {
  /** The envelope's code; `bad_request` when it had none (then `code_missing` is true). */
  code: string | null;
  status: number | null;
  message: string;
  /** The X-Request-Id of the failed call (the API's answer, or the one sent when none came). */
  request_id: string | null;
  code_missing?: true;
  processor_code?: string;
  processor_decline_code?: string;
  errors?: string[];
  details?: Record<string, unknown>;
  error_id?: string;
  error_signature?: string;
  extra?: Record<string, unknown>;
}

/** What an outcome says of a failure: the whole envelope of a PartnerApiError, less for others. */
export function toOutcomeError(error: unknown): OutcomeError | null {
  if (error instanceof PartnerApiError) {
    return {
      code: error.code,
      status: error.status,
      message: error.message,
      request_id: error.requestId,
      ...(error.codeMissing && { code_missing: true as const }),
      ...(error.processorCode !== undefined && { processor_code: error.processorCode }),
      ...(error.processorDeclineCode !== undefined && { processor_decline_code: error.processorDeclineCode }),
      ...(error.errors !== undefined && { errors: error.errors }),
      ...(error.details !== undefined && { details: error.details }),
      ...(error.errorId !== undefined && { error_id: error.errorId }),
      ...(error.errorSignature !== undefined && { error_signature: error.errorSignature }),
      ...(error.extra !== undefined && { extra: error.extra }),
    };
  }
  if (error instanceof PartnerError) {
    return { code: noAnswerCode(error), status: null, message: error.message, request_id: error.requestId };
  }
  return null;
}
