import { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import type { CommandKind } from '../contracts/outcomes.js';
import { fromRaw, type CommandRecord, type RawRow } from '../guard/store/command-repository.js';

/**
 * Read-only queries of the guard's `commands` rows for the PMS-facing status endpoints. Every
 * query is bounded by the source: a source never reads another source's commands.
 */
/** A `commands` row with the outcome last published for it. */
interface Row extends RawRow {
  outcome: unknown;
}

const COLUMNS = Prisma.sql`source, command_id, command_type, target_id, state, payload, snapshot, attempts,
  request_id_base, request_ids, last_error, created_at, updated_at, finished_at, outcome`;

/** A command's row and the outcome last published for it (null before it is final). */
export interface StatusRow {
  record: CommandRecord;
  outcome: Record<string, unknown> | null;
}

function toStatusRow(row: Row): StatusRow {
  return { record: fromRaw(row), outcome: (row.outcome as Record<string, unknown> | null) ?? null };
}

/** Where a page of the list ends: the last row's (updated_at, command_type, command_id). */
export interface ListCursor {
  updatedAt: Date;
  commandType: string;
  commandId: string;
}

export function createCommandStatusRepository(db: Db) {
  return {
    /** Every command type's row with this id from this source (types number their ids apart). */
    async byId(source: string, commandId: string, type?: CommandKind): Promise<StatusRow[]> {
      const rows = await db.$queryRaw<Row[]>`SELECT ${COLUMNS} FROM commands
        WHERE source = ${source} AND command_id = ${commandId}
        ${type ? Prisma.sql`AND command_type = ${type}` : Prisma.empty}
        ORDER BY command_type`;
      return rows.map(toStatusRow);
    },

    /**
     * Commands of a source changed at or after `since`, oldest change first (a PMS catching up reads
     * forward), keyset-paginated so a page never repeats or skips a row while others change.
     */
    async list(
      source: string,
      filter: { since?: Date; states?: string[]; type?: CommandKind; after?: ListCursor; limit: number },
    ): Promise<StatusRow[]> {
      const conditions = [Prisma.sql`source = ${source}`];
      if (filter.since) conditions.push(Prisma.sql`updated_at >= ${filter.since}`);
      if (filter.type) conditions.push(Prisma.sql`command_type = ${filter.type}`);
      if (filter.states?.length) conditions.push(Prisma.sql`state = ANY(${filter.states}::text[])`);
      if (filter.after) {
        const a = filter.after;
        conditions.push(
          Prisma.sql`(updated_at, command_type, command_id) > (${a.updatedAt}::timestamptz, ${a.commandType}, ${a.commandId})`,
        );
      }
      const rows = await db.$queryRaw<Row[]>`SELECT ${COLUMNS} FROM commands
        WHERE ${Prisma.join(conditions, ' AND ')}
        ORDER BY updated_at, command_type, command_id LIMIT ${filter.limit}`;
      return rows.map(toStatusRow);
    },
  };
}
export type CommandStatusRepository = ReturnType<typeof createCommandStatusRepository>;
