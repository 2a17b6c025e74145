import type { GuardAssumptionId } from '../partner/assumptions.js';
import type { SourceKey } from '../partner/source-partners.js';
import type { ProbeHttpOptions } from './probe-http.js';

export type ProbeResult = 'holds' | 'does_not_hold' | 'could_not_tell';

export interface ProbeRow {
  step: string;
  assumption: string;
  /** The guard's proof rests on it (a `does_not_hold` here fails the probe). */
  guard: boolean;
  /** A row about a PMS source's own key (a `does_not_hold` here fails the probe too). */
  source_key?: boolean;
  /** The GUARD_ASSUMPTIONS id, for guard rows. */
  guard_assumption?: GuardAssumptionId;
  result: ProbeResult;
  evidence: string;
  /** What was seen, where a step reads a property rather than checks a yes/no (e.g. `ascending`, `seconds`). */
  observed?: string;
  request_ids: string[];
}

export interface ProbeReport {
  base_url: string;
  environment: string | null;
  write: boolean;
  max_processing_ms: number;
  started_at: string;
  finished_at: string;
  rows: ProbeRow[];
  /** False when an assumption the guard relies on does not hold (consumers then refuse to start). */
  guard_assumptions_hold: boolean;
  /** False when a PMS source's own key does not authenticate or is not as configured (PMS_PARTNER_KEYS). */
  source_keys_hold: boolean;
}

export interface ProbeOptions extends ProbeHttpOptions {
  environment: string | null;
  /** PARTNER_MAX_PROCESSING_MS: the bound a change must become visible within. */
  maxProcessingMs: number;
  write?: {
    applicationId?: string;
    decision?: 'approve' | 'decline';
    reason?: string;
    enrollmentId?: string;
    amountCents?: number;
    /** Create two customers to read the customer list's order back. Default true with `write`. */
    customers?: boolean;
  };
  /** Gap between reads while waiting for a write to show. Default 250 ms. */
  pollMs?: number;
  /** PMS_PARTNER_KEYS: each source's own key, checked as the deployment key is. */
  sources?: Readonly<Record<string, SourceKey>>;
  /** Progress lines (long work shows progress). */
  progress?: (line: string) => void;
}

/** Adds a row; `guard` follows from `guard_assumption`. */
export type AddRow = (row: Omit<ProbeRow, 'guard'> & { guard?: boolean }) => void;

export const obj = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

export const itemsOf = (body: unknown): Array<Record<string, unknown>> =>
  (obj(body).items as Array<Record<string, unknown>> | undefined) ?? [];

/** `200`, or `404 not_found`: the status and the error envelope's code. */
export function describeAnswer(a: { status: number; body: unknown }): string {
  const error = obj(obj(a.body).error);
  return `${a.status}${typeof error.code === 'string' ? ` ${error.code}` : ''}`;
}

export const day = (d: Date) => d.toISOString().slice(0, 10);
