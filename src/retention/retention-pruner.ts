import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import { retentionMetrics, exposeRetentionMetrics } from './retention-metrics.js';
import { markPass, pruneChunk } from './retention-repository.js';
import type { Config } from '../config/config.js';
import { retentionRules, type RetainedTable, type RetentionRule } from './retention-rules.js';

/**
 * Keeps every table within its retention (docs/retention.md): in the background, a pass every
 * `intervalMs` over each table, deleting its prunable rows in chunks of `chunkRows`, each chunk
 * its own short transaction, at most `maxChunksPerPass` per table per pass. A year's backlog thus
 * drains over several passes while commands flow; a table whose pass ends with rows still past its
 * horizon is "behind" (rentbridge_retention_behind, the console) until a pass catches up.
 *
 * Safe with several processes (each chunk takes its table's advisory lock or leaves the table to
 * the process holding it) and resumable after a crash (a chunk commits its rows and its counts
 * together; the rules select by age, so the next pass goes on where the last one stopped).
 */
export interface RetentionPruner {
  start(): void;
  /** Stops between two chunks and waits for the one in hand. */
  stop(): Promise<void>;
  /** One pass over every table (tests, and `start()`'s timer). */
  runPass(): Promise<PassResult>;
}

export interface PassResult {
  /** Rows this process deleted, per table. */
  deleted: Record<RetainedTable, number>;
  /** Tables left with rows past their horizon (the pass's chunk bound was reached). */
  behind: RetainedTable[];
  /** Tables another process was pruning: left to it. */
  skipped: RetainedTable[];
}

export interface RetentionPrunerOptions {
  db: Db;
  logger: Logger;
  rules: readonly RetentionRule[];
  /** Default 300 000 ms (RETENTION_INTERVAL_SECONDS). */
  intervalMs?: number;
  /** Default 2000 (RETENTION_CHUNK_ROWS). */
  chunkRows?: number;
  /** Default 50 (RETENTION_MAX_CHUNKS_PER_PASS). */
  maxChunksPerPass?: number;
  /** The clock horizons are counted from; default the process's. Tests move it. */
  now?: () => number;
}

const DAY_MS = 86_400_000;

export function createRetentionPruner(options: RetentionPrunerOptions): RetentionPruner {
  const { db, rules } = options;
  const logger = options.logger.child({ component: 'retention' });
  const intervalMs = options.intervalMs ?? 300_000;
  const chunkRows = options.chunkRows ?? 2000;
  const maxChunks = options.maxChunksPerPass ?? 50;
  const now = options.now ?? Date.now;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<unknown> | null = null;
  let stopping = false;
  exposeRetentionMetrics();

  /** Prunes one table up to the pass's bound: rows deleted, and whether it stopped early or was held. */
  async function pruneTable(
    rule: RetentionRule,
  ): Promise<{ deleted: number; behind: boolean; held: boolean }> {
    const cutoff = new Date(now() - rule.days * DAY_MS);
    let deleted = 0;
    for (let chunk = 0; chunk < maxChunks; chunk++) {
      if (stopping) return { deleted, behind: true, held: false };
      const result = await pruneChunk(db, rule, cutoff, chunkRows);
      if (result === null) return { deleted, behind: false, held: true };
      deleted += result.deleted;
      retentionMetrics.pruned.inc({ table: rule.table }, result.deleted);
      if (result.deleted < chunkRows) return { deleted, behind: false, held: false };
    }
    return { deleted, behind: true, held: false };
  }

  async function runPass(): Promise<PassResult> {
    const result: PassResult = { deleted: {} as Record<RetainedTable, number>, behind: [], skipped: [] };
    for (const rule of rules) {
      if (stopping) break;
      const t = await pruneTable(rule);
      result.deleted[rule.table] = t.deleted;
      if (t.held) {
        result.skipped.push(rule.table);
        continue;
      }
      if (t.behind) result.behind.push(rule.table);
      retentionMetrics.behind.set({ table: rule.table }, t.behind ? 1 : 0);
      await markPass(db, rule.table, t.behind);
      if (t.deleted > 0) logger.info({ table: rule.table, rows: t.deleted, behind: t.behind }, 'rows pruned');
    }
    if (!stopping) retentionMetrics.lastPass.set(Math.floor(Date.now() / 1000));
    return result;
  }

  function schedule(delayMs: number): void {
    if (stopping) return;
    timer = setTimeout(() => {
      pass = runPass()
        .catch((error: unknown) =>
          logger.warn({ err: error }, 'retention pass failed: trying again on the next'),
        )
        .finally(() => {
          pass = null;
          schedule(intervalMs);
        });
    }, delayMs);
  }

  return {
    start() {
      stopping = false;
      // The first pass soon after start, not at once: a process starting is busy enough.
      schedule(Math.min(intervalMs, 10_000));
    },
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await pass;
    },
    runPass,
  };
}

/** The pruner as configured (the relay role runs it: the role that already prunes the outbox). */
export function createConfiguredRetentionPruner(
  db: Db,
  logger: Logger,
  config: Parameters<typeof retentionRules>[0] &
    Pick<Config, 'RETENTION_INTERVAL_SECONDS' | 'RETENTION_CHUNK_ROWS' | 'RETENTION_MAX_CHUNKS_PER_PASS'>,
): RetentionPruner {
  return createRetentionPruner({
    db,
    logger,
    rules: retentionRules(config),
    intervalMs: config.RETENTION_INTERVAL_SECONDS * 1000,
    chunkRows: config.RETENTION_CHUNK_ROWS,
    maxChunksPerPass: config.RETENTION_MAX_CHUNKS_PER_PASS,
  });
}
