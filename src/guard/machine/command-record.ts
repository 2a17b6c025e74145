import type { OutcomeError } from '../../partner/errors.js';
import type { Snapshot } from '../read-backs/read-back.js';

/**
 * A command's guard row as plain data (tables `commands` and `command_attempts`), one per command
 * identity: source + command type + command id (src/contracts/command-identity.ts). Pure: no I/O. The
 * one writer of the rows is command-repository.ts; this file is also read by the guard's state
 * machine (guard-machine.ts) and by the PMS status endpoints.
 *
 * States: `pending` (known not applied, a write may be made), `in_flight` (committed before
 * every write: the call may have landed), and the final ones below.
 */
export const FINAL_STATES = ['applied', 'already_applied', 'rejected', 'exhausted', 'unverified'] as const;
export type FinalState = (typeof FINAL_STATES)[number];
export type GuardState = 'pending' | 'in_flight' | FinalState;

export function isFinal(state: string): state is FinalState {
  return (FINAL_STATES as readonly string[]).includes(state);
}

export interface GuardError {
  code: string | null;
  status: number | null;
  message: string;
  /** The Partner API's error whole (src/partner/errors.ts `toOutcomeError`), when it answered one. */
  partner_error?: OutcomeError;
  first_failure_at: string;
  last_failure_at: string;
}

export interface CommandRecord {
  /** The command's source (src/contracts/command-identity.ts): part of its identity. */
  source: string;
  commandId: string;
  commandType: string;
  targetId: string;
  state: GuardState;
  payload: unknown;
  snapshot: Snapshot | null;
  /** Writes made so far (attempt n used request id `requestIds[n-1]`). */
  attempts: number;
  /** Every Partner API request id of the command starts with it (src/guard/machine/command-request-ids.ts). */
  requestIdBase: string;
  requestIds: string[];
  lastError: GuardError | null;
  createdAt: Date;
  /** Last change; for an `in_flight` row, when the write was about to be sent. */
  updatedAt: Date;
  finishedAt: Date | null;
}

export interface AttemptRecord {
  attempt: number;
  requestId: string;
  kind: string;
  result: string | null;
  status: number | null;
  code: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

/** A row as `$queryRaw` returns it (column names as in the table). */
export interface RawRow {
  source: string;
  command_id: string;
  command_type: string;
  target_id: string;
  state: string;
  payload: unknown;
  snapshot: unknown;
  attempts: number;
  request_id_base: string;
  request_ids: string[] | null;
  last_error: unknown;
  created_at: Date | string;
  updated_at: Date | string;
  finished_at: Date | string | null;
}

/** A `commands` row (as `RETURNING *` / `SELECT *` answer it) as the guard's record: the one mapping. */
export function fromRaw(row: RawRow): CommandRecord {
  return {
    source: row.source,
    commandId: row.command_id,
    commandType: row.command_type,
    targetId: row.target_id,
    state: row.state as GuardState,
    payload: row.payload,
    snapshot: (row.snapshot as Snapshot | null) ?? null,
    attempts: Number(row.attempts),
    requestIdBase: row.request_id_base,
    requestIds: row.request_ids ?? [],
    lastError: (row.last_error as GuardError | null) ?? null,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    finishedAt: row.finished_at == null ? null : new Date(row.finished_at),
  };
}

/** The same command twice: equal JSON, whatever the order of the keys. */
export function sameContent(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([x], [y]) => (x < y ? -1 : 1)))
      : v,
  );
}

export interface FailureInput {
  code: string | null;
  status: number | null;
  message: string;
  partner_error?: OutcomeError;
  /** Why a check refused the command, per field (a registration's check, spec 4.2). */
  details?: Record<string, string>;
}

/**
 * A step kept beside the writes (`command_attempts`): `snapshot`, `read_back`, `wait`, or where the
 * command's `outcome` message landed on Kafka.
 */
export interface StepInput {
  attempt: number;
  /** The Partner request id of the read, or of the write a wait is about; an outcome's event id. */
  requestId: string;
  kind: 'snapshot' | 'read_back' | 'wait' | 'outcome';
  /** The verdict (`applied`, `not_applied`, `unknown`), what was read, `waited` or `published`. */
  result: string;
  /** Why: what the verdict rests on, what the wait is for; an outcome's `topic[partition]@offset`. */
  message?: string | null;
  startedAt?: Date;
  finishedAt?: Date;
}
