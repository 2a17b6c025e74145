import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import { UNKNOWN_SOURCE, type CommandIdentity } from '../events/command-identity.js';
import type { CommandOutcome } from '../events/outcomes.js';
import type { OutcomeError } from '../partner/errors.js';
import { hashedRequestIdBase, preferredRequestIdBase, writeRequestId } from './command-request-ids.js';
import type { Snapshot } from './read-back.js';

/**
 * The guard's rows (tables `commands` and `command_attempts`), one per command identity: source +
 * command type + command id (src/events/command-identity.ts). Only this file touches Prisma for
 * them; callers get plain objects.
 *
 * A row created before identities whose source is not known (UNKNOWN_SOURCE) is adopted by the
 * first command of the same type, id and content: that is the command it recorded, retried.
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
  /** The command's source (src/events/command-identity.ts): part of its identity. */
  source: string;
  commandId: string;
  commandType: string;
  targetId: string;
  state: GuardState;
  payload: unknown;
  snapshot: Snapshot | null;
  /** Writes made so far (attempt n used request id `requestIds[n-1]`). */
  attempts: number;
  /** Every Partner API request id of the command starts with it (src/guard/command-request-ids.ts). */
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

/** A raw `commands` row as the guard's record (also read by the PMS status endpoints). */
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

type Row = Prisma.CommandGetPayload<object>;

function toRecord(row: Row): CommandRecord {
  return {
    source: row.source,
    commandId: row.commandId,
    commandType: row.commandType,
    targetId: row.targetId,
    state: row.state as GuardState,
    payload: row.payload,
    snapshot: (row.snapshot as Snapshot | null) ?? null,
    attempts: row.attempts,
    requestIdBase: row.requestIdBase,
    requestIds: row.requestIds,
    lastError: (row.lastError as GuardError | null) ?? null,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    finishedAt: row.finishedAt,
  };
}

/** Prisma's compound key of a command. */
function key(id: CommandIdentity) {
  return {
    source_commandType_commandId: { source: id.source, commandType: id.commandType, commandId: id.commandId },
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
  async function mergeError(id: CommandIdentity, failure: FailureInput | undefined) {
    if (!failure) return undefined;
    const row = await db.command.findUnique({ where: key(id), select: { lastError: true } });
    const previous = (row?.lastError as GuardError | null) ?? null;
    const now = new Date().toISOString();
    const merged: GuardError = {
      ...failure,
      first_failure_at: previous?.first_failure_at ?? now,
      last_failure_at: now,
    };
    return merged as unknown as Prisma.InputJsonValue;
  }

  /**
   * The identity's row: adopted from a row of unknown source with the same type, id and content,
   * else inserted as `pending` with `base` (unless the identity or the base is taken), else the
   * identity's existing row. Null when none: another identity holds `base`.
   */
  async function ensureWith(
    input: CommandIdentity & { targetId: string; payload: Prisma.InputJsonValue },
    base: string,
  ): Promise<CommandRecord | null> {
    const payload = JSON.stringify(input.payload);
    const rows = await db.$queryRaw<RawRow[]>`
      WITH adopted AS (
        UPDATE commands SET source = ${input.source}
         WHERE source = ${UNKNOWN_SOURCE} AND ${input.source} <> ${UNKNOWN_SOURCE}
           AND command_type = ${input.commandType} AND command_id = ${input.commandId}
           AND payload = ${payload}::jsonb
           AND NOT EXISTS (SELECT 1 FROM commands WHERE source = ${input.source}
                             AND command_type = ${input.commandType} AND command_id = ${input.commandId})
        RETURNING *),
      ins AS (
        INSERT INTO commands (source, command_id, command_type, target_id, state, payload, request_id_base, request_ids)
        SELECT ${input.source}, ${input.commandId}, ${input.commandType}, ${input.targetId}, 'pending',
               ${payload}::jsonb, ${base}, '{}'
         WHERE NOT EXISTS (SELECT 1 FROM adopted)
        ON CONFLICT DO NOTHING
        RETURNING *)
      SELECT * FROM adopted
      UNION ALL
      SELECT * FROM ins
      UNION ALL
      SELECT * FROM commands
       WHERE source = ${input.source} AND command_type = ${input.commandType} AND command_id = ${input.commandId}
         AND NOT EXISTS (SELECT 1 FROM ins) AND NOT EXISTS (SELECT 1 FROM adopted)`;
    return rows[0] ? fromRaw(rows[0]) : null;
  }

  return {
    async find(id: CommandIdentity): Promise<CommandRecord | null> {
      const row = await db.command.findUnique({ where: key(id) });
      return row ? toRecord(row) : null;
    },

    /**
     * The command's row, created as `pending` when this is the first time it is seen. One round
     * trip in the common case: this is on every command's path. Its request-id base is the
     * command id when that fits and is free, else the encoded one (command-request-ids.ts).
     */
    async ensure(
      input: CommandIdentity & { targetId: string; payload: Prisma.InputJsonValue },
    ): Promise<CommandRecord> {
      const preferred = preferredRequestIdBase(input);
      const row =
        (await ensureWith(input, preferred)) ??
        // Another identity holds the plain id as its base: this one takes the encoded base.
        (await ensureWith(input, hashedRequestIdBase(input)));
      if (!row) throw new Error(`command ${input.commandId} neither inserted nor found`);
      return row;
    },

    /**
     * The common case in one round trip: a command seen for the first time is created directly as
     * `in_flight` for write attempt 1, with its snapshot and attempt row, under its preferred
     * request-id base. Null when it cannot be (the identity has a row, a row of unknown source
     * may be this command's, or another identity holds the base): the caller then goes through
     * `ensure` and walks the row from its state.
     */
    async createInFlight(
      input: CommandIdentity & {
        targetId: string;
        payload: Prisma.InputJsonValue;
        requestIdBase: string;
        snapshot: Snapshot;
        /** The snapshot's read, kept as the command's first step (in the same statement). */
        snapshotRead?: StepInput;
      },
    ): Promise<CommandRecord | null> {
      const requestId = writeRequestId(input.requestIdBase, 1);
      const read = input.snapshotRead;
      const rows = await db.$queryRaw<RawRow[]>`
        WITH ins AS (
          INSERT INTO commands (source, command_id, command_type, target_id, state, payload, snapshot, attempts,
                                request_id_base, request_ids)
          SELECT ${input.source}, ${input.commandId}, ${input.commandType}, ${input.targetId}, 'in_flight',
                 ${JSON.stringify(input.payload)}::jsonb, ${JSON.stringify(input.snapshot)}::jsonb, 1,
                 ${input.requestIdBase}, ARRAY[${requestId}::text]
           WHERE NOT EXISTS (SELECT 1 FROM commands WHERE source = ${UNKNOWN_SOURCE}
                               AND command_type = ${input.commandType} AND command_id = ${input.commandId})
          ON CONFLICT DO NOTHING
          RETURNING *),
        snap AS (
          INSERT INTO command_attempts (source, command_type, command_id, attempt, request_id, kind, started_at,
                                        finished_at, result, message)
          SELECT source, command_type, command_id, ${read?.attempt ?? 0}, ${read?.requestId ?? ''}, ${read?.kind ?? 'snapshot'},
                 ${read?.startedAt ?? null}::timestamptz, ${read?.finishedAt ?? null}::timestamptz,
                 ${read?.result ?? null}, ${read?.message ?? null}
            FROM ins WHERE ${read !== undefined}::boolean),
        att AS (
          INSERT INTO command_attempts (source, command_type, command_id, attempt, request_id, kind)
          SELECT source, command_type, command_id, 1, ${requestId}, 'write' FROM ins)
        SELECT * FROM ins`;
      return rows[0] ? fromRaw(rows[0]) : null;
    },

    /**
     * Commits `in_flight` with the attempt's request id BEFORE the write is sent: whatever happens
     * next (crash, time-out), a later run knows a write may have landed. `snapshot` is stored only
     * when the row has none: the baseline of every read-back is the snapshot taken before the
     * command's FIRST write, never a later one (a later one may already hold a late write).
     */
    async beginWrite(id: CommandIdentity, input: { attempt: number; requestId: string; snapshot: Snapshot }) {
      // One statement, so atomic: the row and its attempt commit together.
      await db.$executeRaw`
        WITH u AS (
          UPDATE commands
             SET state = 'in_flight', attempts = ${input.attempt},
                 snapshot = coalesce(snapshot, ${JSON.stringify(input.snapshot)}::jsonb),
                 request_ids = array_append(coalesce(request_ids, '{}'), ${input.requestId}::text),
                 updated_at = now()
           WHERE source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId}
          RETURNING source, command_type, command_id)
        INSERT INTO command_attempts (source, command_type, command_id, attempt, request_id, kind)
        SELECT source, command_type, command_id, ${input.attempt}, ${input.requestId}, 'write' FROM u`;
    },

    /** The write succeeded: its attempt and the command are finished together (one round trip). */
    async applied(id: CommandIdentity, attempt: number, status: number): Promise<CommandRecord> {
      const rows = await db.$queryRaw<RawRow[]>`
        WITH a AS (
          UPDATE command_attempts SET finished_at = now(), result = 'applied', status = ${status}
           WHERE source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId}
             AND attempt = ${attempt} AND kind = 'write' AND finished_at IS NULL)
        UPDATE commands SET state = 'applied', finished_at = now(), updated_at = now()
         WHERE source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId}
        RETURNING *`;
      const row = rows[0];
      if (!row) throw new Error(`command ${id.commandId} not found`);
      return fromRaw(row);
    },

    /** The write's answer: `applied`, `throttled`, `failed:<kind>`… with the HTTP status and code. */
    async endWrite(
      id: CommandIdentity,
      attempt: number,
      input: { result: string; status?: number | null; code?: string | null; message?: string | null },
    ) {
      await db.commandAttempt.updateMany({
        where: {
          source: id.source,
          commandType: id.commandType,
          commandId: id.commandId,
          attempt,
          kind: 'write',
          finishedAt: null,
        },
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
    async logRead(id: CommandIdentity, input: StepInput) {
      await db.commandAttempt.create({
        data: {
          source: id.source,
          commandType: id.commandType,
          commandId: id.commandId,
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
    async markPending(id: CommandIdentity, failure?: FailureInput) {
      await db.command.update({
        where: key(id),
        data: { state: 'pending', ...(failure ? { lastError: await mergeError(id, failure) } : {}) },
      });
    },

    async finish(id: CommandIdentity, state: FinalState, failure?: FailureInput): Promise<CommandRecord> {
      const row = await db.command.update({
        where: key(id),
        data: {
          state,
          finishedAt: new Date(),
          ...(failure ? { lastError: await mergeError(id, failure) } : {}),
        },
      });
      return toRecord(row);
    },

    /**
     * The outcome about to be published for the command, kept whole so the PMS status endpoint
     * answers what Kafka says (Partner ids included). Written before the send: a failed send is
     * retried with the same outcome.
     */
    async recordOutcome(id: CommandIdentity, outcome: CommandOutcome): Promise<void> {
      await db.$executeRaw`UPDATE commands SET outcome = ${JSON.stringify(outcome)}::jsonb
        WHERE source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId}`;
    },

    async attempts(id: CommandIdentity): Promise<AttemptRecord[]> {
      const rows = await db.commandAttempt.findMany({
        where: { source: id.source, commandType: id.commandType, commandId: id.commandId },
        orderBy: { id: 'asc' },
      });
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
