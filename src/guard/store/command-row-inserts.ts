import type { Prisma } from '@prisma/client';
import type { Db } from '../../db/prisma.js';
import { UNKNOWN_SOURCE, type CommandIdentity } from '../../contracts/command-contracts.js';
import {
  fromRaw,
  type CommandRecord,
  type RawRow,
  type StepInput,
  writeRequestId,
} from '../machine/command-record.js';
import type { Snapshot } from '../read-backs/read-back.js';

/**
 * The two statements that create a `commands` row, for command-repository.ts (the one writer of
 * the table). A row created before identities whose source is not known (UNKNOWN_SOURCE) is
 * adopted by the first command of the same type, id and content: that is the command it
 * recorded, retried.
 */

export type NewCommand = CommandIdentity & { targetId: string; payload: Prisma.InputJsonValue };

/**
 * The identity's row: adopted from a row of unknown source with the same type, id and content,
 * else inserted as `pending` with `base` (unless the identity or the base is taken), else the
 * identity's existing row. Null when none: another identity holds `base`.
 */
export async function ensureWith(db: Db, input: NewCommand, base: string): Promise<CommandRecord | null> {
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

/**
 * The common case in one round trip: a command seen for the first time is created directly as
 * `in_flight` for write attempt 1, with its snapshot and attempt row, under its preferred
 * request-id base. Null when it cannot be (the identity has a row, a row of unknown source
 * may be this command's, or another identity holds the base): the caller then goes through
 * `ensure` and walks the row from its state.
 */
export async function createInFlight(
  db: Db,
  input: NewCommand & {
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
             ${read?.startedAt ?? null}::timestamptz, ${read?.finishedAt ?? new Date()}::timestamptz,
             ${read?.result ?? null}, ${read?.message ?? null}
        FROM ins WHERE ${read !== undefined}::boolean),
    att AS (
      INSERT INTO command_attempts (source, command_type, command_id, attempt, request_id, kind)
      SELECT source, command_type, command_id, 1, ${requestId}, 'write' FROM ins)
    SELECT * FROM ins`;
  return rows[0] ? fromRaw(rows[0]) : null;
}
