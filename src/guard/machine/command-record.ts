import type { OutcomeError } from '../../partner/errors.js';
import type { Snapshot } from '../read-backs/read-back.js';
import { createHash } from 'node:crypto';
import type { CommandIdentity } from '../../contracts/command-contracts.js';

/**
 * A command's guard row as plain data (tables `commands` and `command_attempts`), one per command
 * identity: source + command type + command id (src/contracts/command-contracts.ts). Pure: no I/O. The
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
  /** The command's source (src/contracts/command-contracts.ts): part of its identity. */
  source: string;
  commandId: string;
  commandType: string;
  targetId: string;
  state: GuardState;
  payload: unknown;
  snapshot: Snapshot | null;
  /** Writes made so far (attempt n used request id `requestIds[n-1]`). */
  attempts: number;
  /** Every Partner API request id of the command starts with it (src/guard/machine/command-record.ts). */
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

/**
 * The X-Request-Id of every Partner API call the guard makes is derived from the command, so the
 * partner's logs, the sandbox ledger, our rows and the outcome all name the same attempt. Spec
 * 7.3 keeps an id of 1 to 128 characters of `A-Z a-z 0-9 _ . -` unchanged; anything else would be
 * replaced by a UUID, losing the link.
 *
 * Each command has a request-id BASE, chosen once when its guard row is created and kept on the
 * row (`commands.request_id_base`, unique), so that `trace`, the console and the outcome tie
 * every call back to its command (docs/decisions/020-command-identity.md):
 * - a command id that fits (1 to 96 of the alphabet, leaving room for `.a<n>.r<k>`) is the base
 *   as it is, as before identities: `pay-42` → `pay-42.a1`;
 * - otherwise, or when another identity already holds that base (acme's payment `42` after
 *   acme's decision `42`, or beta's payment `42`), the base is the id with every other character
 *   turned into `_`, cut to 79 characters, then `-` and the first 16 hex digits of the SHA-256
 *   of `<source> NUL <command type> NUL <command id>`: `pms_7f3_decision__7_f_r_Wohnung-1f0c…`.
 *   The hash is over the whole identity, so two identities never share a base.
 */
const SAFE = /^[A-Za-z0-9_.-]+$/;
const MAX_BASE = 96;

/** The base a command id keeps when it fits and no other identity holds it; else null. */
export function plainRequestIdBase(commandId: string): string | null {
  return SAFE.test(commandId) && commandId.length <= MAX_BASE && commandId !== '.' && commandId !== '..'
    ? commandId
    : null;
}

/** The encoded base of an identity (the hash tells identities apart). */
export function hashedRequestIdBase(identity: CommandIdentity): string {
  const hash = createHash('sha256')
    .update(`${identity.source}\u0000${identity.commandType}\u0000${identity.commandId}`)
    .digest('hex')
    .slice(0, 16);
  return `${identity.commandId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, MAX_BASE - 17)}-${hash}`;
}

/** The base a new command asks for first: its id unchanged when it fits, else the encoded one. */
export function preferredRequestIdBase(identity: CommandIdentity): string {
  return plainRequestIdBase(identity.commandId) ?? hashedRequestIdBase(identity);
}

/** The id of write attempt `n` (1-based): `<base>.a<n>`. */
export function writeRequestId(base: string, attempt: number): string {
  return `${base}.a${attempt}`;
}

/** The id of the `k`-th read made around write attempt `n`: `<base>.a<n>.r<k>`. */
export function readRequestId(base: string, attempt: number, read: number): string {
  return `${base}.a${attempt}.r${read}`;
}
