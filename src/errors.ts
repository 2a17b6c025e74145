/**
 * rentbridge's own errors: one class with the HTTP status and stable code it answers with (the
 * Partner API's error envelope, spec 7.1), and whether a retry may help. The Partner API's
 * errors are in src/partner/errors.ts.
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly retriable: boolean;
  /** Extra envelope fields, e.g. `errors` for validation_error. */
  readonly extra: Record<string, unknown>;

  constructor(
    status: number,
    code: string,
    message: string,
    options: { retriable?: boolean; cause?: unknown; extra?: Record<string, unknown> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.retriable = options.retriable ?? false;
    this.extra = options.extra ?? {};
  }
}

/** Turns anything thrown into an Error (for logs and envelopes). */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : JSON.stringify(thrown));
}

/** Bad usage or configuration of a command: the CLI exits with code 2 (docs/cli.md). */
export class UsageError extends Error {
  override name = 'UsageError';
}
