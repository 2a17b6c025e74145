import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import type { OutcomeError } from '../partner/errors.js';
import type { Snapshot } from './read-back.js';

/**
 * The guard's rows (tables `commands` and `command_attempts`), one per command id. Only this
 * file touches Prisma for them; callers get plain objects.
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
  commandId: string;
  commandType: string;
  targetId: string;
  state: GuardState;
  payload: unknown;
  snapshot: Snapshot | null;
  /** Writes made so far (attempt n used request id `requestIds[n-1]`). */
  attempts: number;
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

type Row = Prisma.CommandGetPayload<object>;

function toRecord(row: Row): CommandRecord {
  return {
    commandId: row.commandId,
    commandType: row.commandType,
    targetId: row.targetId,
    state: row.state as GuardState,
    payload: row.payload,
    snapshot: (row.snapshot as Snapshot | null) ?? null,
    attempts: row.attempts,
    requestIds: row.requestIds,
    lastError: (row.lastError as GuardError | null) ?? null,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    finishedAt: row.finishedAt,
  };
}

/** A row as `$queryRaw` returns it (column names as in the table). */
interface RawRow {
  command_id: string;
  command_type: string;
  target_id: string;
  state: string;
  payload: unknown;
  snapshot: unknown;
  attempts: number;
  request_ids: string[] | null;
  last_error: unknown;
  created_at: Date | string;
  updated_at: Date | string;
  finished_at: Date | string | null;
}

function fromRaw(row: RawRow): CommandRecord {
  return {
    commandId: row.command_id,
    commandType: row.command_type,
    targetId: row.target_id,
    state: row.state as GuardState,
    payload: row.payload,
    snapshot: (row.snapshot as Snapshot | null) ?? null,
    attempts: Number(row.attempts),
    requestIds: row.request_ids ?? [],
    lastError: (row.last_error as GuardError | null) ?? null,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    finishedAt: row.finished_at == null ? null : new Date(row.finished_at),
  };
}

export interface FailureInput {
  code: string | null;
  status: number | null;
  message: string;
  partner_error?: OutcomeError;
}

export type CommandRepository = ReturnType<typeof createCommandRepository>;

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

export function createCommandRepository(db: Db) {
  async function mergeError(commandId: string, failure: FailureInput | undefined) {
    if (!failure) return undefined;
    const row = await db.command.findUnique({ where: { commandId }, select: { lastError: true } });
    const previous = (row?.lastError as GuardError | null) ?? null;
    const now = new Date().toISOString();
    const merged: GuardError = {
      ...failure,
      first_failure_at: previous?.first_failure_at ?? now,
      last_failure_at: now,
    };
    return merged as unknown as Prisma.InputJsonValue;
  }

  return {
    async find(commandId: string): Promise<CommandRecord | null> {
      const row = await db.command.findUnique({ where: { commandId } });
      return row ? toRecord(row) : null;
    },

    /**
     * The command's row, created as `pending` when this is the first time it is seen. One round
     * trip: this is on every command's path.
     */
    async ensure(input: {
      commandId: string;
      commandType: string;
      targetId: string;
      payload: Prisma.InputJsonValue;
    }): Promise<CommandRecord> {
      const rows = await db.$queryRaw<RawRow[]>`
        WITH ins AS (
          INSERT INTO commands (command_id, command_type, target_id, state, payload, request_ids)
          VALUES (${input.commandId}, ${input.commandType}, ${input.targetId}, 'pending',
                  ${JSON.stringify(input.payload)}::jsonb, '{}')
          ON CONFLICT (command_id) DO NOTHING
          RETURNING *)
        SELECT * FROM ins
        UNION ALL
        SELECT * FROM commands WHERE command_id = ${input.commandId} AND NOT EXISTS (SELECT 1 FROM ins)`;
      const row = rows[0];
      if (!row) throw new Error(`command ${input.commandId} neither inserted nor found`);
      return fromRaw(row);
    },

    /**
     * The common case in one round trip: a command seen for the first time is created directly as
     * `in_flight` for write attempt 1, with its snapshot and attempt row. Null when the command
     * already has a row (the caller then walks it from its state).
     */
    async createInFlight(input: {
      commandId: string;
      commandType: string;
      targetId: string;
      payload: Prisma.InputJsonValue;
      requestId: string;
      snapshot: Snapshot;
      /** The snapshot's read, kept as the command's first step (in the same statement). */
      snapshotRead?: StepInput;
    }): Promise<CommandRecord | null> {
      const read = input.snapshotRead;
      const rows = await db.$queryRaw<RawRow[]>`
        WITH ins AS (
          INSERT INTO commands (command_id, command_type, target_id, state, payload, snapshot, attempts, request_ids)
          VALUES (${input.commandId}, ${input.commandType}, ${input.targetId}, 'in_flight',
                  ${JSON.stringify(input.payload)}::jsonb, ${JSON.stringify(input.snapshot)}::jsonb, 1,
                  ARRAY[${input.requestId}::text])
          ON CONFLICT (command_id) DO NOTHING
          RETURNING *),
        snap AS (
          INSERT INTO command_attempts (command_id, attempt, request_id, kind, started_at, finished_at, result, message)
          SELECT command_id, ${read?.attempt ?? 0}, ${read?.requestId ?? ''}, ${read?.kind ?? 'snapshot'},
                 ${read?.startedAt ?? null}::timestamptz, ${read?.finishedAt ?? null}::timestamptz,
                 ${read?.result ?? null}, ${read?.message ?? null}
            FROM ins WHERE ${read !== undefined}::boolean),
        att AS (
          INSERT INTO command_attempts (command_id, attempt, request_id, kind)
          SELECT command_id, 1, ${input.requestId}, 'write' FROM ins)
        SELECT * FROM ins`;
      return rows[0] ? fromRaw(rows[0]) : null;
    },

    /**
     * Commits `in_flight` with the attempt's request id BEFORE the write is sent: whatever happens
     * next (crash, time-out), a later run knows a write may have landed. `snapshot` is stored only
     * when the row has none: the baseline of every read-back is the snapshot taken before the
     * command's FIRST write, never a later one (a later one may already hold a late write).
     */
    async beginWrite(commandId: string, input: { attempt: number; requestId: string; snapshot: Snapshot }) {
      // One statement, so atomic: the row and its attempt commit together.
      await db.$executeRaw`
        WITH u AS (
          UPDATE commands
             SET state = 'in_flight', attempts = ${input.attempt},
                 snapshot = coalesce(snapshot, ${JSON.stringify(input.snapshot)}::jsonb),
                 request_ids = array_append(coalesce(request_ids, '{}'), ${input.requestId}::text),
                 updated_at = now()
           WHERE command_id = ${commandId}
          RETURNING command_id)
        INSERT INTO command_attempts (command_id, attempt, request_id, kind)
        SELECT command_id, ${input.attempt}, ${input.requestId}, 'write' FROM u`;
    },

    /** The write succeeded: its attempt and the command are finished together (one round trip). */
    async applied(commandId: string, attempt: number, status: number): Promise<CommandRecord> {
      const rows = await db.$queryRaw<RawRow[]>`
        WITH a AS (
          UPDATE command_attempts SET finished_at = now(), result = 'applied', status = ${status}
           WHERE command_id = ${commandId} AND attempt = ${attempt} AND kind = 'write' AND finished_at IS NULL)
        UPDATE commands SET state = 'applied', finished_at = now(), updated_at = now()
         WHERE command_id = ${commandId}
        RETURNING *`;
      const row = rows[0];
      if (!row) throw new Error(`command ${commandId} not found`);
      return fromRaw(row);
    },

    /** The write's answer: `applied`, `throttled`, `failed:<kind>`… with the HTTP status and code. */
    async endWrite(
      commandId: string,
      attempt: number,
      input: { result: string; status?: number | null; code?: string | null; message?: string | null },
    ) {
      await db.commandAttempt.updateMany({
        where: { commandId, attempt, kind: 'write', finishedAt: null },
        data: {
          finishedAt: new Date(),
          result: input.result,
          status: input.status ?? null,
          code: input.code ?? null,
          message: input.message?.slice(0, 2000) ?? null,
        },
      });
    },

    /**
     * A step of the guard other than a write: a read (snapshot or read-back) with its verdict and
     * why, or a wait with its reason. Start and end come from this process's clock, so its
     * duration is never negative (the column's default is the database's clock).
     */
    async logRead(commandId: string, input: StepInput) {
      await db.commandAttempt.create({
        data: {
          commandId,
          attempt: input.attempt,
          requestId: input.requestId,
          kind: input.kind,
          result: input.result,
          message: input.message?.slice(0, 2000) ?? null,
          ...(input.startedAt && { startedAt: input.startedAt }),
          finishedAt: input.finishedAt ?? new Date(),
        },
      });
    },

    /** Back to `pending`: the last write is proven not applied. */
    async markPending(commandId: string, failure?: FailureInput) {
      await db.command.update({
        where: { commandId },
        data: { state: 'pending', ...(failure ? { lastError: await mergeError(commandId, failure) } : {}) },
      });
    },

    async finish(commandId: string, state: FinalState, failure?: FailureInput): Promise<CommandRecord> {
      const row = await db.command.update({
        where: { commandId },
        data: {
          state,
          finishedAt: new Date(),
          ...(failure ? { lastError: await mergeError(commandId, failure) } : {}),
        },
      });
      return toRecord(row);
    },

    async attempts(commandId: string): Promise<AttemptRecord[]> {
      const rows = await db.commandAttempt.findMany({ where: { commandId }, orderBy: { id: 'asc' } });
      return rows.map((r) => ({
        attempt: r.attempt,
        requestId: r.requestId,
        kind: r.kind,
        result: r.result,
        status: r.status,
        code: r.code,
        startedAt: r.startedAt,
        finishedAt: r.finishedAt,
      }));
    },
  };
}
