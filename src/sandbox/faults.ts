import { createHash, randomUUID } from 'node:crypto';

export const FAULT_KINDS = ['error', 'apply_then_error', 'apply_then_timeout', 'delay'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface Fault {
  id: string;
  method: string;
  /** Exact path, or `*` standing for one segment: `/partner/v1/applications/* /approve`. */
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
}

export type FaultInput = {
  method: string;
  path: string;
  kind: FaultKind;
  status?: number | null;
  code?: string | null;
  delay_ms?: number;
  times?: number | null;
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
    };
    // Omitting `code` must not read as "legacy error without code": default it by kind below.
    if (input.code === undefined) fault.code = input.kind === 'delay' ? null : 'api_error';
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
