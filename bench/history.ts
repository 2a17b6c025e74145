/**
 * `npm run bench -- history` (issue 42): the read paths and the command path with a year of a large
 * PMS in the tables, against the same paths on an empty schema. The year: 1.02M commands (two guard
 * attempts and one outcome callback each, with its attempt), 3.06M record versions, 20,000 dead
 * letters, 40,000 audit entries, spread over 365 days (test/support/history-fill.ts).
 * BENCH_HISTORY_SCALE (default 1) scales every volume: 0.1 is a tenth.
 *
 * Figures, p50 / p99 of BENCH_HISTORY_SAMPLES (default 1,000) calls each (a read path for at least
 * BENCH_HISTORY_SECONDS in all, default 20), on two schemas, a call to each in turn so the
 * machine's load weighs on both alike: "empty" is a first day (below), the other the year. "Within
 * 1.2×" compares their p99s; each ratio comes with its 90% interval from resampling
 * (bench/history-figures.ts, p99Ratio), since a p99 rests on its few slowest calls:
 * - the command path end to end (bench/history-e2e.ts): a signed PMS webhook → receiver → relay →
 *   Kafka → consumer → sandbox → outcome on Kafka, the roles as their own processes, one deployment
 *   on each schema (so both also hold the same last hour of traffic);
 * - the command path's database work: the guard's rows of one command and its callback delivery;
 * - the PMS status call (one command; the list of the last hour), the trace by each kind of id,
 *   one overview refresh, the dead-letter list, the callbacks' status: the functions the HTTP
 *   routes call;
 * - pages per call of each read path, empty and filled (bench/history-figures.ts, pageCounter):
 *   the shared buffers its statements touch, which the machine's load does not change;
 * - storage per month of operation (table and indexes), from PostgreSQL's sizes after the fill;
 * - the command path while a backlog past the retention (the fill's older half, under
 *   BENCH_HISTORY_RETENTION_DAYS, default 182) is pruned by the retention pruner at its defaults.
 *
 * The first day ("empty"): a day of the year's commands, versions and audit entries (at least the
 * rows the paths look up), so its last hour, which the overview and the PMS list read, holds the
 * same traffic as the year's; the same outbox (kept 72 h: as full on day 3 as on day 365); and
 * as many open dead letters as the year's (2,000 at scale 1: letters ops have not resolved are the
 * same work on any day), among at least 1,000. Only the history behind them differs: the year's
 * resolved letters, finished commands, delivered callbacks and superseded versions.
 * BENCH_HISTORY_EMPTY=rows is the first day as it was before (only the rows looked up: no traffic in
 * its last hour, a page of `samples / 10` open letters), for comparing with earlier runs.
 *
 * BENCH_HISTORY_STATEMENTS=1 prints the pages of each statement behind the pages-per-call figures.
 * BENCH_HISTORY_BEFORE=1 drops the indexes of migration 20261127100000 first: the figures before it.
 * BENCH_HISTORY_E2E=0 skips the end-to-end path (no Kafka); BENCH_HISTORY_PORT (44010) is the
 * first receiver's port, the next one the second's.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { createDb, type Db } from '../src/db/prisma.js';
import {
  fillHistory,
  firstValue,
  scaled,
  YEAR_OF_A_LARGE_PMS,
  type HistoryVolumes,
} from '../test/support/history-fill.js';
import { databaseBase, kafkaBrokers } from './env.js';
import { startEndToEnd, type EndToEnd } from './history-e2e.js';
import { pageCounter, pruningUnderLoad, report, seqRowsRead, storagePerMonth } from './history-figures.js';
import { commandPath, paths, type Path } from './history-paths.js';
import type { BenchResult } from './types.js';

/**
 * A sample on the empty schema, then one on the filled, in turn: both under the same load. At least
 * `samples` of each and at least `minMs` in all, so a fast path gets the samples a stable p99 needs
 * (a path of 0.5 ms: some 20,000 in 20 s); the ids looked up cycle through the first `samples`.
 */
async function measurePair(
  empty: [Db, Path[1]],
  filled: [Db, Path[1]],
  samples: number,
  minMs: number,
): Promise<[number[], number[]]> {
  const times: [number[], number[]] = [[], []];
  const started = performance.now();
  for (let i = 0; i < samples || performance.now() - started < minMs; i++) {
    for (const [k, [db, path]] of [empty, filled].entries()) {
      const t0 = performance.now();
      await path(db, i % samples);
      times[k]!.push(performance.now() - t0);
    }
  }
  return times;
}

/**
 * The command path end to end on both deployments, a command to each in turn; the rows the roles
 * read by sequential scan of the year's growing tables meanwhile.
 */
async function endToEndPair(
  e2e: [EndToEnd, EndToEnd],
  samples: number,
  sql: pg.Pool,
  figures: BenchResult['figures'],
  over: string[],
): Promise<void> {
  for (const side of e2e) await side.settle();
  const seqBefore = await seqRowsRead(sql);
  const times: [number[], number[]] = [[], []];
  const missing = [0, 0];
  for (let i = 0; i < samples; i++) {
    for (const [k, side] of e2e.entries()) {
      const ms = await side.sample();
      if (ms === null) missing[k]!++;
      else times[k]!.push(ms);
    }
  }
  for (const [table, n] of Object.entries(await seqRowsRead(sql))) {
    const read = n - (seqBefore[table] ?? 0);
    if (read > 0) figures[`rows read by sequential scan, filled end to end: ${table}`] = read;
  }
  const name = 'command path end to end (webhook → Kafka → outcome)';
  report(figures, name, times[0], times[1], over);
  figures[`${name}: outcomes missing, empty / filled`] = `${missing[0]} / ${missing[1]}`;
}

/**
 * The "empty" deployment, a first day (see the top of this file): a lookup finds its row on both
 * schemas, the answers are pages of the same size, and only the year around them differs.
 * `rowsOnly`: just the rows the paths look up, as the bench did first.
 */
async function fillFirstDay(sql: pg.Pool, year: HistoryVolumes, samples: number, rowsOnly: boolean) {
  const looked = { commands: 3 * samples + 3, versions: 3 * samples + 6, audit: samples };
  if (rowsOnly) {
    await fillHistory(sql, { ...looked, deadLetters: samples, outbox: samples + 1 });
    return;
  }
  const day = (n: number) => Math.round(n / 365);
  // More commands looked up than a day holds (many samples, a small scale): as many days as they
  // take at the year's rate, so the last hour holds the year's traffic still.
  const days = Math.max(1, looked.commands / Math.max(1, day(year.commands)));
  await fillHistory(
    sql,
    {
      commands: Math.max(looked.commands, day(year.commands)),
      versions: Math.max(looked.versions, day(year.versions)),
      audit: Math.max(looked.audit, day(year.audit)),
      deadLetters: 0,
      outbox: Math.max(samples + 1, year.outbox),
    },
    { spanDays: days },
  );
  const none = { commands: 0, versions: 0, audit: 0, outbox: 0 };
  // Its own tag: the steps that follow the commands (attempts, callbacks) must not run twice.
  const open = Math.round(year.deadLetters / 10); // the year's open letters: one in ten
  await fillHistory(
    sql,
    { ...none, deadLetters: Math.max(samples, 1000, open) },
    { spanDays: 365, tag: 'l' },
  );
  // As many open as the year holds, the rest resolved: letters ops have not resolved are the same
  // work on any day.
  await sql.query(
    `UPDATE dead_letters d
        SET state = CASE WHEN r.n <= $1 THEN 'open' ELSE 'discarded' END,
            resolved_at = CASE WHEN r.n <= $1 THEN NULL ELSE coalesce(d.resolved_at, d.indexed_at) END,
            resolution = CASE WHEN r.n <= $1 THEN NULL ELSE coalesce(d.resolution, 'duplicate payment') END
       FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM dead_letters) r
      WHERE d.id = r.id`,
    [open],
  );
}

async function dropNewIndexes(sql: pg.Pool): Promise<void> {
  const { readFile } = await import('node:fs/promises');
  const text = await readFile(
    new URL('../prisma/migrations/20261127100000_retention_and_lookups/migration.sql', import.meta.url),
    'utf8',
  );
  for (const m of text.matchAll(/CREATE INDEX IF NOT EXISTS "(\w+)"/g))
    await sql.query(`DROP INDEX "${m[1]}"`);
}

export async function run(): Promise<BenchResult> {
  const scale = Number(process.env.BENCH_HISTORY_SCALE ?? 1);
  const samples = Number(process.env.BENCH_HISTORY_SAMPLES ?? 1000);
  const minMs = 1000 * Number(process.env.BENCH_HISTORY_SECONDS ?? 20);
  const retentionDays = Number(process.env.BENCH_HISTORY_RETENTION_DAYS ?? 182);
  const before = process.env.BENCH_HISTORY_BEFORE === '1';
  const e2eOn = process.env.BENCH_HISTORY_E2E !== '0';
  const volumes = scaled(YEAR_OF_A_LARGE_PMS, scale);
  const base = databaseBase();
  const schema = `bench_history_${randomBytes(4).toString('hex')}`;
  const schemas = [schema, `${schema}_empty`];
  const [url, emptyUrl] = schemas.map((s) => withSchema(base, s)) as [string, string];
  await migrate(url);
  await migrate(emptyUrl);
  const pool = (s: string) =>
    new pg.Pool({
      connectionString: parseDatabaseUrl(url).connectionString,
      max: 2,
      options: `-c search_path=${s}`,
    });
  const sql = pool(schema);
  const emptySql = pool(`${schema}_empty`);
  const db = createDb(url, { max: 5 });
  const emptyDb = createDb(emptyUrl, { max: 5 });
  const figures: BenchResult['figures'] = {
    scale,
    samples,
    'indexes of migration 20261127100000': before ? 'dropped (before)' : 'present',
  };
  // One deployment on each schema, started before the fill (they idle through it).
  const e2e: EndToEnd[] = [];
  const port = Number(process.env.BENCH_HISTORY_PORT ?? 44010);
  const start = (databaseUrl: string, k: number) =>
    startEndToEnd({
      databaseUrl,
      brokers: kafkaBrokers().join(','),
      port: port + k,
      commands: samples + 10,
    });
  const over: string[] = [];
  try {
    if (before) for (const p of [sql, emptySql]) await dropNewIndexes(p);
    await fillFirstDay(emptySql, volumes, samples, process.env.BENCH_HISTORY_EMPTY === 'rows');
    await emptySql.query('VACUUM ANALYZE');
    if (e2eOn) for (const [k, u] of [emptyUrl, url].entries()) e2e.push(await start(u, k));

    const started = Date.now();
    await fillHistory(sql, volumes, {
      onTable: (t, ms) => console.log(`  filled ${t} in ${(ms / 1000).toFixed(1)} s`),
    });
    await sql.query('VACUUM ANALYZE');
    figures['fill (s)'] = Math.round((Date.now() - started) / 1000);
    figures.commands = volumes.commands;
    figures['record versions'] = volumes.versions;

    if (e2e.length === 2) {
      await endToEndPair(e2e as [EndToEnd, EndToEnd], samples, sql, figures, over);
      for (const side of e2e) await side.stop();
    }

    const eventId = await firstValue(sql, `SELECT event_id FROM outbox ORDER BY id DESC LIMIT 1`);
    const letterId = await firstValue(sql, `SELECT id FROM dead_letters ORDER BY id LIMIT 1`);
    const emptyPaths = paths(
      await firstValue(emptySql, `SELECT event_id FROM outbox ORDER BY id DESC LIMIT 1`),
      await firstValue(emptySql, `SELECT id FROM dead_letters ORDER BY id LIMIT 1`),
    );
    const seqBefore = await seqRowsRead(sql);
    for (const [k, [name, path]] of paths(eventId, letterId).entries()) {
      const [empty, filled] = await measurePair([emptyDb, emptyPaths[k]![1]], [db, path], samples, minMs);
      figures[`${name}: samples of each`] = empty.length;
      report(figures, name, empty, filled, over);
    }
    figures['every p99 within 1.2× of empty'] = over.length === 0 ? 'yes' : `no: ${over.join('; ')}`;
    // Load-independent: rows PostgreSQL read by sequential scan of the growing tables during the
    // filled measurements (the "73M rows of command_attempts"), from pg_stat_user_tables.
    const seqAfter = await seqRowsRead(sql);
    for (const [table, n] of Object.entries(seqAfter)) {
      const read = n - (seqBefore[table] ?? 0);
      if (read > 0) figures[`rows read by sequential scan, filled read paths: ${table}`] = read;
    }
    figures['rows read by sequential scan, filled read paths: all'] = Object.entries(seqAfter).reduce(
      (sum, [table, n]) => sum + n - (seqBefore[table] ?? 0),
      0,
    );
    const counters = [pageCounter(emptyUrl, emptySql), pageCounter(url, sql)] as const;
    for (const [k, [name, path]] of paths(eventId, letterId).entries()) {
      if (name.startsWith('command path')) continue; // writes: EXPLAIN ANALYZE would run them
      const empty = await counters[0].pages(emptyPaths[k]![1]);
      figures[`${name}: pages per call, empty / filled`] = `${empty} / ${await counters[1].pages(path)}`;
    }
    for (const c of counters) await c.close();
    await storagePerMonth(db, figures);
    await pruningUnderLoad(db, samples, retentionDays, figures, commandPath);
  } finally {
    for (const side of e2e) await side.stop().catch(() => undefined);
    await db.$disconnect();
    await emptyDb.$disconnect();
    for (const s of schemas) await sql.query(`DROP SCHEMA IF EXISTS ${quoteIdent(s)} CASCADE`);
    await sql.end();
    await emptySql.end();
  }
  return {
    name: 'history',
    figures,
    notes: [
      `volumes at scale ${scale}: ${JSON.stringify(volumes)} (a large PMS's year at scale 1), spread over 365 days`,
      process.env.BENCH_HISTORY_EMPTY === 'rows'
        ? 'a schema holding only the rows looked up ("empty") and the filled one, sampled in turn (same load), the end-to-end path on a deployment of each'
        : 'a first day at the year\'s rate ("empty": the same last hour of traffic, the same 72 h outbox, the same open letters) and the filled year, sampled in turn (same load), the end-to-end path on a deployment of each; BENCH_HISTORY_EMPTY=rows holds only the rows looked up, as before',
      'p99 filled / empty: the ratio of the two p99s, with the 90% interval of 1,000 bootstrap resamples of both sides; "within 1.2×" judges the ratio itself',
    ],
  };
}
