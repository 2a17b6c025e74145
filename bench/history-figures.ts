/**
 * The history bench's figures (bench/history.ts): percentiles and the p99 verdict with its
 * interval, pages per call, the rows read by sequential scan, storage per month, and the command
 * path while a backlog is pruned.
 */
import type pg from 'pg';
import { loadConfig } from '../src/config/config.js';
import type { Db } from '../src/db/prisma.js';
import { createLogger } from '../src/logger.js';
import { createRetentionPruner } from '../src/retention/retention-pruner.js';
import { retentionRules } from '../src/retention/retention-rules.js';
import { tableStorage } from '../src/retention/retention-repository.js';
import { capturingDb, GROWING_TABLES } from '../test/support/history-fill.js';
import type { BenchResult } from './types.js';

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** A generator of uniform numbers in [0, 1), seeded: the same samples give the same interval. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * p99 filled / p99 empty, and the 90% interval of that ratio from 1,000 bootstrap resamples of both
 * sides: how far the figure itself may move from run to run at this many samples. A p99 rests on
 * its few slowest calls, so the interval is wide at 200 samples and narrows with more.
 */
export function p99Ratio(empty: number[], filled: number[]): { ratio: number; low: number; high: number } {
  const random = seeded(42);
  const sorted = [empty, filled].map((t) => [...t].sort((a, b) => a - b)) as [number[], number[]];
  // A resample's p99, without sorting it: how often each rank of the sorted samples was drawn.
  const resampledP99 = (t: number[]) => {
    const drawn = new Uint32Array(t.length);
    for (let i = 0; i < t.length; i++) drawn[Math.floor(random() * t.length)]!++;
    const rank = Math.min(t.length - 1, Math.floor(0.99 * t.length));
    for (let j = 0, seen = 0; j < t.length; j++) if ((seen += drawn[j]!) > rank) return t[j]!;
    return t[t.length - 1] ?? 0;
  };
  const ratios: number[] = [];
  for (let i = 0; i < 1000; i++)
    ratios.push(resampledP99(sorted[1]) / Math.max(resampledP99(sorted[0]), 0.001));
  return {
    ratio: percentile(filled, 99) / Math.max(percentile(empty, 99), 0.001),
    low: percentile(ratios, 5),
    high: percentile(ratios, 95),
  };
}

/**
 * p50 / p99 of each side, their p99 ratio with its 90% interval, and the verdict: a path whose
 * ratio is over 1.2 is named in `over`, whatever its interval.
 */
export function report(
  figures: BenchResult['figures'],
  name: string,
  empty: number[],
  filled: number[],
  over: string[],
): void {
  const r = p99Ratio(empty, filled);
  const ms = (t: number[]) => `${percentile(t, 50).toFixed(1)} / ${percentile(t, 99).toFixed(1)}`;
  figures[`${name}: p50 / p99 ms, empty`] = ms(empty);
  figures[`${name}: p50 / p99 ms, filled`] = ms(filled);
  figures[`${name}: p99 filled / empty (90% interval)`] =
    `${r.ratio.toFixed(2)} (${r.low.toFixed(2)}–${r.high.toFixed(2)})`;
  if (r.ratio > 1.2) over.push(name);
}

export async function measure(
  db: Db,
  path: (db: Db, i: number) => Promise<unknown>,
  samples: number,
): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    await path(db, i);
    times.push(performance.now() - started);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

/**
 * Pages one call of a read path touches on a schema: the shared buffers (hit or read) of each
 * statement it sends, from EXPLAIN (ANALYZE, BUFFERS). A figure the machine's load does not change:
 * whether a path reads more with a year behind it shows here even where the timings are noise.
 * The call runs once first (as a refresh after the first one), then once with its statements
 * captured.
 */
export function pageCounter(url: string, sql: pg.Pool) {
  const { db, statements: captured } = capturingDb(url);
  return {
    async pages(run: (db: Db, i: number) => Promise<unknown>): Promise<number> {
      await run(db, 0);
      captured.length = 0;
      await run(db, 0);
      let pages = 0;
      for (const c of captured.filter((c) => /^\s*(SELECT|WITH)\b/i.test(c.query))) {
        const { rows } = await sql.query<{ 'QUERY PLAN': Array<{ Plan: Record<string, number> }> }>(
          `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${c.query}`,
          c.params,
        );
        const plan = rows[0]!['QUERY PLAN'][0]!.Plan;
        const own = (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
        pages += own;
        if (process.env.BENCH_HISTORY_STATEMENTS)
          console.log(`    ${own} pages: ${c.query.replace(/\s+/g, ' ').slice(0, 140)}`);
      }
      return pages;
    },
    close: () => db.$disconnect(),
  };
}

/** seq_tup_read of each growing table of the schema (the statistics collector's, flushed first). */
export async function seqRowsRead(sql: pg.Pool): Promise<Record<string, number>> {
  // A backend reports its counts when idle, at most every 10 s (PostgreSQL 15).
  await new Promise((r) => setTimeout(r, 11_000));
  const { rows } = await sql.query<{ relname: string; n: string }>(
    `SELECT relname, seq_tup_read AS n FROM pg_stat_user_tables
      WHERE schemaname = current_schema() AND relname = ANY($1::text[])`,
    [GROWING_TABLES],
  );
  return Object.fromEntries(rows.map((r) => [r.relname, Number(r.n)]));
}

/** Storage per month: each table's size (table + indexes) after the fill of a year, over 12. */
export async function storagePerMonth(db: Db, figures: BenchResult['figures']): Promise<void> {
  let total = 0;
  for (const t of await tableStorage(db)) {
    if (t.tableBytes + t.indexBytes < 1_000_000 && t.table !== 'audit_log') continue;
    const mb = (n: number) => (n / 12 / 2 ** 20).toFixed(1);
    figures[`storage per month: ${t.table} (table / indexes, MiB)`] =
      `${mb(t.tableBytes)} / ${mb(t.indexBytes)}`;
    total += t.tableBytes + t.indexBytes;
  }
  figures['storage per month: all (MiB)'] = (total / 12 / 2 ** 20).toFixed(1);
}

/** The command path alone, then while the pruner deletes the backlog past `retentionDays`. */
export async function pruningUnderLoad(
  db: Db,
  samples: number,
  retentionDays: number,
  figures: BenchResult['figures'],
  commandPath: (db: Db) => Promise<void>,
): Promise<void> {
  const config = loadConfig({
    COMMAND_RETENTION_DAYS: String(retentionDays),
    COMMAND_ATTEMPT_RETENTION_DAYS: String(retentionDays),
    CALLBACK_RETENTION_DAYS: String(retentionDays),
    CALLBACK_ATTEMPT_RETENTION_DAYS: String(retentionDays),
    PUBLISHED_VERSION_RETENTION_DAYS: String(retentionDays),
    DEAD_LETTER_RETENTION_DAYS: String(retentionDays),
  });
  const pruner = createRetentionPruner({
    db,
    logger: createLogger({ level: 'silent' }),
    rules: retentionRules(config),
    maxChunksPerPass: 1_000_000,
  });
  const alone = await measure(db, () => commandPath(db), samples * 2);
  const started = Date.now();
  let pruned = 0;
  const pass = pruner.runPass().then((r) => (pruned = Object.values(r.deleted).reduce((a, b) => a + b, 0)));
  const times: number[] = [];
  let passDone = false;
  void pass.finally(() => (passDone = true));
  while (!passDone || times.length < samples) {
    const t0 = performance.now();
    await commandPath(db);
    times.push(performance.now() - t0);
    if (passDone && times.length >= samples) break;
  }
  await pass;
  figures['command path alone: p50 / p99 ms'] = `${alone.p50.toFixed(1)} / ${alone.p99.toFixed(1)}`;
  figures['command path while pruning: p50 / p99 ms'] =
    `${percentile(times, 50).toFixed(1)} / ${percentile(times, 99).toFixed(1)}`;
  figures['rows pruned (backlog past the retention)'] = pruned;
  figures['prune pass (s)'] = ((Date.now() - started) / 1000).toFixed(1);
}
