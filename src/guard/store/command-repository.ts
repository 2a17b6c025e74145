import type { Prisma } from '@prisma/client';
import type { Db } from '../../db/prisma.js';
import type { CommandIdentity } from '../../contracts/command-contracts.js';
import type { CommandOutcome } from '../../contracts/outcomes.js';
import {
  fromRaw,
  type AttemptRecord,
  type CommandRecord,
  type FailureInput,
  type FinalState,
  type RawRow,
  type StepInput,
  hashedRequestIdBase,
  preferredRequestIdBase,
} from '../machine/command-record.js';
import { createInFlight, ensureWith, type NewCommand } from './command-row-inserts.js';
import { redriveReset } from '../machine/guard-machine.js';
import type { Snapshot } from '../read-backs/read-back.js';

export * from '../machine/command-record.js';

/**
 * The one writer of the guard's rows (tables `commands` and `command_attempts`), one per command
 * identity: source + command type + command id (src/contracts/command-contracts.ts). Every change it
 * makes is an action of the guard's state machine (guard-machine.ts), the redrive's reset
 * included. Callers get plain objects (command-record.ts); rows are read back through one
 * mapping (`fromRaw`).
 */

export type CommandRepository = ReturnType<typeof createCommandRepository>;

type Tx = Prisma.TransactionClient;

/** The identity's columns only (callers may pass a command input that carries more). */
const keyOf = (id: CommandIdentity) => ({
  source: id.source,
  commandType: id.commandType,
  commandId: id.commandId,
});

/** The row's error after `failure`: the first failure's time kept, the last one's now. */
function mergedError(failure: FailureInput | undefined): string | null {
  return failure ? JSON.stringify(failure) : null;
}

export function createCommandRepository(db: Db) {
  /** The state (and error, when given) of the row, answered as it is then. */
  async function setState(
    id: CommandIdentity,
    state: 'pending' | FinalState,
    failure: FailureInput | undefined,
  ): Promise<CommandRecord> {
    const now = new Date().toISOString();
    const rows = await db.$queryRaw<RawRow[]>`
      UPDATE commands
         SET state = ${state}, updated_at = now(),
             finished_at = CASE WHEN ${state} = 'pending' THEN finished_at ELSE now() END,
             last_error = CASE WHEN ${mergedError(failure)}::jsonb IS NULL THEN last_error
               ELSE ${mergedError(failure)}::jsonb || jsonb_build_object(
                 'first_failure_at', coalesce(last_error->>'first_failure_at', ${now}::text),
                 'last_failure_at', ${now}::text) END
       WHERE source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId}
      RETURNING *`;
    if (!rows[0]) throw new Error(`command ${id.commandId} not found`);
    return fromRaw(rows[0]);
  }

  return {
    async find(id: CommandIdentity): Promise<CommandRecord | null> {
      const rows = await db.$queryRaw<RawRow[]>`SELECT * FROM commands
        WHERE source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId}`;
      return rows[0] ? fromRaw(rows[0]) : null;
    },

    /**
     * The command's row, created as `pending` when this is the first time it is seen. One round
     * trip in the common case: this is on every command's path. Its request-id base is the
     * command id when that fits and is free, else the encoded one (command-record.ts).
     */
    async ensure(input: NewCommand): Promise<CommandRecord> {
      const row =
        (await ensureWith(db, input, preferredRequestIdBase(input))) ??
        // Another identity holds the plain id as its base: this one takes the encoded base.
        (await ensureWith(db, input, hashedRequestIdBase(input)));
      if (!row) throw new Error(`command ${input.commandId} neither inserted nor found`);
      return row;
    },

    /**
     * The request-id base of the identity's Partner API calls, known before its first call (the
     * snapshot read and a registration's check go out before the row exists): its row's when it
     * has one; else the command id when that fits and no other identity holds it; else the
     * encoded one. So acme's payment 42 never reads with `42.a0.r1` once acme's decision 42 holds
     * `42`. (Two identities arriving at once may both ask for the free plain id: the one whose row
     * is second takes the encoded base for its writes; only its first reads shared the id.)
     */
    async requestIdBaseFor(id: CommandIdentity): Promise<string> {
      const preferred = preferredRequestIdBase(id);
      const rows = await db.$queryRaw<Array<{ base: string; own: boolean }>>`
        SELECT request_id_base AS base,
               (source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId}) AS own
          FROM commands
         WHERE (source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId})
            OR request_id_base = ${preferred}`;
      const own = rows.find((r) => r.own);
      if (own) return own.base;
      return rows.length > 0 ? hashedRequestIdBase(id) : preferred;
    },

    createInFlight: (input: Parameters<typeof createInFlight>[1]) => createInFlight(db, input),

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
        where: { ...keyOf(id), attempt, kind: 'write', finishedAt: null },
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
     * why, a wait with its reason, where the outcome landed. Start and end come from this
     * process's clock, so its duration is never negative (the column's default is the database's).
     */
    async logRead(id: CommandIdentity, input: StepInput) {
      await db.commandAttempt.create({
        data: {
          ...keyOf(id),
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
      await setState(id, 'pending', failure);
    },

    finish: (id: CommandIdentity, state: FinalState, failure?: FailureInput) => setState(id, state, failure),

    /**
     * Reconciliation settles a parked command (issue 45, docs/reconciliation.md): `unverified` →
     * `applied` when the platform's records show its write landed (a later read-back's `applied`),
     * or → `pending` when they show it absent long after the processing bound (the read-back's
     * `not_applied`, so a redrive may write again). Only while the row is still `unverified`; the
     * step says which run and what evidence. Answers the row, or null when it changed meanwhile.
     */
    async settleUnverified(
      id: CommandIdentity,
      to: 'applied' | 'pending',
      step: StepInput,
    ): Promise<CommandRecord | null> {
      const rows = await db.$queryRaw<RawRow[]>`
        UPDATE commands
           SET state = ${to}, updated_at = now(),
               finished_at = CASE WHEN ${to} = 'applied' THEN now() ELSE NULL END
         WHERE source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId}
           AND state = 'unverified'
        RETURNING *`;
      const row = rows[0];
      if (!row) return null;
      await db.commandAttempt.create({
        data: {
          ...keyOf(id),
          attempt: step.attempt,
          requestId: step.requestId,
          kind: step.kind,
          result: step.result,
          message: step.message?.slice(0, 2000) ?? null,
        },
      });
      return fromRaw(row);
    },

    /**
     * The outcome the command holds (its status) and the CloudEvent id it went out under (null
     * when 0.1.0 wrote it), for keptOutcomeId. Read before recordOutcome replaces them.
     */
    async publishedOutcome(id: CommandIdentity): Promise<{ id: string | null; status: string | null }> {
      const rows = await db.$queryRaw<Array<{ id: string | null; status: string | null }>>`
        SELECT outcome_id AS id, outcome->>'status' AS status FROM commands
         WHERE source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId}`;
      return rows[0] ?? { id: null, status: null };
    },

    /**
     * The outcome about to be published for the command, kept whole so the PMS status endpoint
     * answers what Kafka says (Partner ids included), with the CloudEvent id it goes out under.
     * Written before the send: a failed send is retried with the same outcome and id.
     */
    async recordOutcome(id: CommandIdentity, outcome: CommandOutcome, outcomeId: string): Promise<void> {
      await db.$executeRaw`UPDATE commands SET outcome = ${JSON.stringify(outcome)}::jsonb, outcome_id = ${outcomeId}
        WHERE source = ${id.source} AND command_type = ${id.commandType} AND command_id = ${id.commandId}`;
    },

    async attempts(id: CommandIdentity): Promise<AttemptRecord[]> {
      const rows = await db.commandAttempt.findMany({ where: keyOf(id), orderBy: { id: 'asc' } });
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

/**
 * The redrive's reset (docs/decisions/008-redrive-resets-the-guard-row.md), in the redrive's
 * transaction: a final, not-applied row goes back to the state the guard's machine names for it
 * (`redriveReset`), only while it is still in the state the caller saw; answers the new state, or
 * null when the row changed meanwhile or is not resettable. The row's attempts and request ids
 * stay, so the history in `command_attempts` is kept and new attempts get new request ids.
 */
export async function resetCommandRow(
  tx: Tx,
  identity: CommandIdentity,
  expectedState: string,
  /** A corrected command: the row's content becomes it, so the guard takes it for this command. */
  corrected?: { payload: Prisma.InputJsonValue; targetId: string },
): Promise<'pending' | 'in_flight' | null> {
  const key = keyOf(identity);
  const row = await tx.command.findUnique({
    where: { source_commandType_commandId: key },
    select: { state: true, snapshot: true },
  });
  if (!row || row.state !== expectedState) return null;
  const next = redriveReset(row.state, row.snapshot != null);
  if (!next) return null;
  const { count } = await tx.command.updateMany({
    where: { ...key, state: expectedState },
    data: { state: next, finishedAt: null, ...corrected },
  });
  return count === 1 ? next : null;
}
