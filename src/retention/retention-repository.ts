import type { Db } from '../db/prisma.js';
import type { RetentionRule } from './retention-rules.js';

/** The retention pruner's reads and writes: one chunk's DELETE, its bookkeeping, the tables' sizes. */

/** What one chunk did: `null` when another process holds the table (it is pruning it now). */
export type ChunkResult = { deleted: number } | null;

/**
 * Deletes one chunk of `rule`'s prunable rows in one short transaction, with the table's
 * bookkeeping (retention_state) in the same transaction: a crash loses neither a count nor a row,
 * and the next pass simply goes on (the rules select by age, not by a saved position).
 *
 * One process prunes a table at a time: a transaction-level advisory lock, tried, never waited for,
 * keyed by the schema and the table (tests and deployments sharing a server keep apart). A second
 * process finds it taken and leaves the table to the first: neither blocks, no row is counted twice.
 */
export async function pruneChunk(
  db: Db,
  rule: RetentionRule,
  cutoff: Date,
  chunkRows: number,
): Promise<ChunkResult> {
  return db.$transaction(
    async (tx) => {
      const [lock] = await tx.$queryRawUnsafe<Array<{ locked: boolean }>>(
        `SELECT pg_try_advisory_xact_lock(hashtext(current_schema()), hashtext($1)) AS locked`,
        `rentbridge.retention.${rule.table}`,
      );
      if (lock?.locked !== true) return null;
      const deleted = await tx.$executeRawUnsafe(
        `DELETE FROM ${rule.table} WHERE ${rule.locator} = ANY(ARRAY(${rule.chunk}))`,
        cutoff,
        chunkRows,
      );
      if (deleted > 0) {
        await tx.$executeRaw`
          INSERT INTO retention_state (table_name, last_pruned_at, last_pruned_rows, pruned_total)
          VALUES (${rule.table}, now(), ${deleted}, ${deleted})
          ON CONFLICT (table_name) DO UPDATE
             SET last_pruned_at = now(), last_pruned_rows = ${deleted},
                 pruned_total = retention_state.pruned_total + ${deleted}`;
      }
      return { deleted };
    },
    { timeout: 120_000, maxWait: 30_000 },
  );
}

/** Records the end of a table's pass: when, and whether rows past its horizon were left. */
export async function markPass(db: Db, table: string, behind: boolean): Promise<void> {
  await db.$executeRaw`
    INSERT INTO retention_state (table_name, last_pass_at, behind) VALUES (${table}, now(), ${behind})
    ON CONFLICT (table_name) DO UPDATE SET last_pass_at = now(), behind = ${behind}`;
}

export interface TableStorage {
  table: string;
  /** Rows, as PostgreSQL's statistics estimate them (0 where it has none yet). */
  rowsEstimate: number;
  /**
   * Rows as the console shows them: counted for a table up to EXACT_COUNT_BYTES (a count of a small
   * table is cheap, and the planner's estimate of one is often missing or stale: 0 for a table
   * that holds rows), else the estimate; null when a large table has no estimate yet.
   */
  rows: number | null;
  /** `rows` was counted, not estimated. */
  rowsExact: boolean;
  tableBytes: number;
  indexBytes: number;
  /** The pruner's bookkeeping; null for a table it does not prune (or has not yet). */
  lastPassAt: Date | null;
  lastPrunedAt: Date | null;
  prunedTotal: number;
  behind: boolean;
}

/** Tables up to this size are counted (a few milliseconds each); larger ones are estimated. */
export const EXACT_COUNT_BYTES = 16 * 1024 * 1024;

/** The size of each table of rentbridge's schema, with its pruning state: the console's "Data and retention". */
export async function tableStorage(db: Db): Promise<TableStorage[]> {
  const rows = await db.$queryRaw<
    Array<{
      table: string;
      rows: number;
      table_bytes: bigint;
      index_bytes: bigint;
      last_pass_at: Date | null;
      last_pruned_at: Date | null;
      pruned_total: bigint | null;
      behind: boolean | null;
    }>
  >`
    SELECT c.relname::text AS table, c.reltuples::float8 AS rows,
           pg_table_size(c.oid) AS table_bytes, pg_indexes_size(c.oid) AS index_bytes,
           s.last_pass_at, s.last_pruned_at, s.pruned_total, s.behind
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
      LEFT JOIN retention_state s ON s.table_name = c.relname
     WHERE c.relkind IN ('r', 'p') AND c.relname NOT LIKE '\\_prisma%'
     ORDER BY c.relname`;
  const counts = await Promise.all(
    rows.map(async (r) => {
      if (Number(r.table_bytes) > EXACT_COUNT_BYTES) return null;
      // The name comes from pg_class, quoted as an identifier.
      const [row] = await db.$queryRawUnsafe<Array<{ n: bigint }>>(
        `SELECT count(*) AS n FROM "${r.table.replaceAll('"', '""')}"`,
      );
      return Number(row?.n ?? 0);
    }),
  );
  return rows.map((r, i) => ({
    table: r.table,
    rowsEstimate: Math.max(0, Math.round(r.rows)),
    rows: counts[i] ?? (r.rows >= 0 ? Math.round(r.rows) : null),
    rowsExact: counts[i] != null,
    tableBytes: Number(r.table_bytes),
    indexBytes: Number(r.index_bytes),
    lastPassAt: r.last_pass_at,
    lastPrunedAt: r.last_pruned_at,
    prunedTotal: Number(r.pruned_total ?? 0),
    behind: r.behind ?? false,
  }));
}
