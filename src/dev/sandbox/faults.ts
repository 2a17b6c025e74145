import { createHash, randomUUID } from 'node:crypto';

export const FAULT_KINDS = ['error', 'apply_then_error', 'apply_then_timeout', 'delay'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface Fault {
  id: string;
  method: string;
  /** Exact path, or a pattern where a `*` segment stands for any one segment. */
  path: string;
  kind: FaultKind;
  status: number | null;
  /** The envelope's code; null answers a legacy error without `code`. */
  code: string | null;
  delay_ms: number;
  /** Matches left; null = forever. */
  times: number | null;
  /** Stable per fault: the `error_signature` of the `api_error`s it causes (spec 7.1). */
  signature: string;
  /**
   * Fields added to (or replacing) the error envelope the fault answers with: `message`,
   * `processor_decline_code`, `errors`, `details`, or fields of a code the spec does not know.
   */
  envelope?: Record<string, unknown>;
}

export type FaultInput = {
  method: string;
  path: string;
  kind: FaultKind;
  status?: number | null;
  code?: string | null;
  delay_ms?: number;
  times?: number | null;
  envelope?: Record<string, unknown>;
};

/**
 * The code a fault answers when it names only a status. 409 is `lock_failed` (a fault is
 * transient: "fetch again and retry"); other 5xx are `api_error`.
 */
const CODE_OF_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthenticated',
  402: 'processor_card_error',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'lock_failed',
  422: 'validation_error',
  429: 'rate_limited',
  503: 'request_timeout',
};

function matches(pattern: string, path: string): boolean {
  if (pattern === path) return true;
  const want = pattern.split('/');
  const got = path.split('/');
  return want.length === got.length && want.every((segment, i) => segment === '*' || segment === got[i]);
}

/** Injected faults, matched in the order they were added. */
export class FaultRegistry {
  private faults: Fault[] = [];

  add(input: FaultInput): Fault {
    const fault: Fault = {
      id: randomUUID(),
      method: input.method.toUpperCase(),
      path: input.path,
      kind: input.kind,
      status: input.status ?? null,
      code: input.code === undefined ? null : input.code,
      delay_ms: input.delay_ms ?? 0,
      times: input.times === undefined ? 1 : input.times,
      signature: '',
      ...(input.envelope && { envelope: input.envelope }),
    };
    // Omitting `code` must not read as "legacy error without code": it follows from the
    // status (a 503 is `request_timeout`), else it is the 500 `api_error`.
    if (input.code === undefined) {
      fault.code = input.kind === 'delay' ? null : (CODE_OF_STATUS[input.status ?? 500] ?? 'api_error');
    }
    fault.signature = `sig_${createHash('sha256')
      .update(`${fault.method} ${fault.path} ${fault.kind} ${fault.code} ${fault.id}`)
      .digest('hex')
      .slice(0, 24)}`;
    this.faults.push(fault);
    return fault;
  }

  list(): Fault[] {
    return [...this.faults];
  }

  clear(): void {
    this.faults = [];
  }

  /** The first fault matching the request, with one of its `times` used up. */
  take(method: string, path: string): Fault | undefined {
    const fault = this.faults.find((f) => f.method === method && matches(f.path, path));
    if (!fault) return undefined;
    if (fault.times !== null) {
      fault.times -= 1;
      if (fault.times <= 0) this.faults = this.faults.filter((f) => f !== fault);
    }
    return fault;
  }
}
