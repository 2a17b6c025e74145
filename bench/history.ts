/**
 * `npm run bench -- history` (issue 42): the read paths and the command path with a year of a large
 * PMS in the tables, against the same paths on an empty schema. The year: 1.02M commands (two guard
 * attempts and one outcome callback each, with its attempt), 3.06M record versions, 20,000 dead
 * letters, 40,000 audit entries, spread over 365 days (test/support/history-fill.ts).
 * BENCH_HISTORY_SCALE (default 1) scales every volume: 0.1 is a tenth.
 *
 * Figures, p50 / p99 of BENCH_HISTORY_SAMPLES (default 50) calls each:
 * - the command path end to end (bench/history-e2e.ts): a signed PMS webhook → receiver → relay →
 *   Kafka → consumer → sandbox → outcome on Kafka, the roles as their own processes on the schema
 *   that is filled, measured before the fill and after it;
 * - the command path's database work: the guard's rows of one command and its callback delivery;
 * - the PMS status call (one command; the list of the last hour), the trace by each kind of id,
 *   one overview refresh, the dead-letter list, the callbacks' status: the functions the HTTP
 *   routes call. These run on two schemas, a sample of each in turn, so the machine's load weighs
 *   on both alike: "empty" is a first day (below), the other the year; "within 1.2×" compares
 *   their p99s;
 * - pages per call of each read path, empty and filled (bench/history-figures.ts, pageCounter):
 *   the shared buffers its statements touch, which the machine's load does not change;
 * - storage per month of operation (table and indexes), from PostgreSQL's sizes after the fill;
 * - the command path while a backlog past the retention (the fill's older half, under
 *   BENCH_HISTORY_RETENTION_DAYS, default 182) is pruned by the retention pruner at its defaults.
 *
 * The first day ("empty"): a day of the year's commands, versions and audit entries (at least the
 * rows the paths look up), so its last hour, which the overview and the PMS list read, holds the
 * same traffic as the year's; the same outbox (kept 72 h: as full on day 3 as on day 365); and
 * dead letters spread over the year, at least 1,000 (100 open: the open list answers a full page
 * on both). Only the history behind them differs. BENCH_HISTORY_EMPTY=rows is the first day as it
 * was before (only the rows looked up: no traffic in its last hour, a page of `samples / 10` open
 * letters), for comparing with earlier runs.
 *
 * BENCH_HISTORY_STATEMENTS=1 prints the pages of each statement behind the pages-per-call figures.
 * BENCH_HISTORY_BEFORE=1 drops the indexes of migration 20261127100000 first: the figures before it.
 * BENCH_HISTORY_E2E=0 skips the end-to-end path (no Kafka); BENCH_HISTORY_PORT (44010) is the
 * receiver's port.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Registry } from 'prom-client';
import { listDeliveries, insertDeliveries, queueBySource } from '../src/callbacks/callback-repository.js';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { createDb, type Db } from '../src/db/prisma.js';
import { countDeadLetters, searchDeadLetters } from '../src/dead-letters/dead-letter-repository.js';
import { createCommandRepository } from '../src/guard/store/command-repository.js';
import { SnapshotRing } from '../src/ops/overview/metric-samples.js';
import { buildOverview } from '../src/ops/overview/overview.js';
import { createCommandStatusRepository } from '../src/pms/command-status-repository.js';
import { traceId } from '../src/event-trace/trace.js';
import {
  fillHistory,
  firstValue,
  scaled,
  YEAR_OF_A_LARGE_PMS,
  type HistoryVolumes,
} from '../test/support/history-fill.js';
import { startEndToEnd } from './history-e2e.js';
import {
  pageCounter,
  percentile,
  pruningUnderLoad,
  seqRowsRead,
  storagePerMonth,
} from './history-figures.js';
import type { BenchResult } from './types.js';

type Path = [string, (db: Db, i: number) => Promise<unknown>];

let commandSeq = 0;
/** One command's database work on the command path, as the consumer and callbacks do it. */
async function commandPath(db: Db): Promise<void> {
  const id = {
    source: 'acme',
    commandType: 'rental_payment' as const,
    commandId: `bench-${process.pid}-${++commandSeq}`,
  };
  const guard = createCommandRepository(db);
  await guard.ensure({ ...id, targetId: `enr_${commandSeq % 5000}`, payload: { amount_cents: 120000 } });
  const requestId = `${id.commandId}.a1`;
  await guard.beginWrite(id, {
    attempt: 1,
    requestId,
    snapshot: { status: 'active', updated_at: new Date().toISOString() } as never,
  });
  await guard.applied(id, 1, 201);
  await guard.recordOutcome(id, { status: 'applied' } as never);
  await insertDeliveries(db, [
    {
      source: 'acme',
      webhookId: `msg_${id.commandId}`,
      eventId: id.commandId,
      eventType: 'rentbridge.outcome',
      commandType: 'rental_payment',
      commandId: id.commandId,
      outcomeStatus: 'applied',
      payload: '{}',
    },
  ]);
}

function paths(eventId: string, letterId: string): Path[] {
  const trace = (id: (i: number) => string) => (db: Db, i: number) =>
    traceId(db, id(i), { topicPrefix: '', retentionHours: 72 });
  const status = (db: Db) => createCommandStatusRepository(db);
  return [
    ['command path (guard rows + callback)', (db) => commandPath(db)],
    ['PMS status of one command', (db, i) => status(db).byId('acme', `h-pay-${3 * i + 3}`)],
    [
      'PMS command list, last hour',
      (db) => status(db).list('acme', { since: new Date(Date.now() - 3_600_000), limit: 100 }),
    ],
    ['trace by command id', trace((i) => `h-pay-${i + 1}`)],
    ['trace by Partner request id', trace((i) => `h-pay-${i + 1}.a1`)],
    ['trace by webhook id', trace((i) => `h-ob-${i + 1}`)],
    ['trace by CloudEvent id', trace(() => eventId)],
    ['trace by record id', trace((i) => `h_rec_${i + 1}`)],
    ['trace by dead-letter id', trace(() => letterId)],
    [
      'overview refresh',
      (db) => buildOverview({ db, registry: new Registry(), ring: new SnapshotRing(), topicPrefix: '' }),
    ],
    [
      'dead-letter list (open) and counts',
      async (db) => {
        await searchDeadLetters(db, { state: 'open', limit: 100 });
        await countDeadLetters(db, { state: 'open' });
      },
    ],
    [
      "callbacks' status",
      async (db) => {
        await queueBySource(db);
        await listDeliveries(db, { state: 'dead', limit: 50 });
      },
    ],
  ];
}

type Stats = { p50: number; p99: number };

/** A sample on the empty schema, then one on the filled, in turn: both under the same load. */
async function measurePair(
  empty: [Db, Path[1]],
  filled: [Db, Path[1]],
  samples: number,
): Promise<{ empty: Stats; filled: Stats }> {
  const times: [number[], number[]] = [[], []];
  for (let i = 0; i < samples; i++) {
    for (const [k, [db, path]] of [empty, filled].entries()) {
      const started = performance.now();
      await path(db, i);
      times[k]!.push(performance.now() - started);
    }
  }
  const stats = (t: number[]) => ({ p50: percentile(t, 50), p99: percentile(t, 99) });
  return { empty: stats(times[0]), filled: stats(times[1]) };
}

/** p50 / p99 empty and filled, their p99 ratio and the verdict; the paths over 1.2× are listed in `over`. */
function report(figures: BenchResult['figures'], name: string, e: Stats, f: Stats, over: string[]): void {
  const ratio = f.p99 / Math.max(e.p99, 0.001);
  figures[`${name}: p50 / p99 ms, empty`] = `${e.p50.toFixed(1)} / ${e.p99.toFixed(1)}`;
  figures[`${name}: p50 / p99 ms, filled`] = `${f.p50.toFixed(1)} / ${f.p99.toFixed(1)}`;
  figures[`${name}: p99 filled / empty`] = ratio.toFixed(2);
  if (ratio > 1.2) over.push(name);
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
  await fillHistory(
    sql,
    {
      commands: Math.max(looked.commands, day(year.commands)),
      versions: Math.max(looked.versions, day(year.versions)),
      audit: Math.max(looked.audit, day(year.audit)),
      deadLetters: 0,
      outbox: Math.max(samples + 1, year.outbox),
    },
    { spanDays: 1 },
  );
  const none = { commands: 0, versions: 0, audit: 0, outbox: 0 };
  // Its own tag: the steps that follow the commands (attempts, callbacks) must not run twice.
  await fillHistory(sql, { ...none, deadLetters: Math.max(samples, 1000) }, { spanDays: 365, tag: 'l' });
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
  const samples = Number(process.env.BENCH_HISTORY_SAMPLES ?? 50);
  const retentionDays = Number(process.env.BENCH_HISTORY_RETENTION_DAYS ?? 182);
  const before = process.env.BENCH_HISTORY_BEFORE === '1';
  const e2eOn = process.env.BENCH_HISTORY_E2E !== '0';
  const volumes = scaled(YEAR_OF_A_LARGE_PMS, scale);
  const base = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
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
  const e2e = e2eOn
    ? await startEndToEnd({
        databaseUrl: url,
        brokers: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092',
        port: Number(process.env.BENCH_HISTORY_PORT ?? 44010),
        commands: 2 * samples + 10,
      })
    : null;
  const over: string[] = [];
  try {
    if (before) for (const p of [sql, emptySql]) await dropNewIndexes(p);
    await fillFirstDay(emptySql, volumes, samples, process.env.BENCH_HISTORY_EMPTY === 'rows');
    await emptySql.query('VACUUM ANALYZE');
    const e2eEmpty = await e2e?.measure(samples);

    const started = Date.now();
    await fillHistory(sql, volumes, {
      onTable: (t, ms) => console.log(`  filled ${t} in ${(ms / 1000).toFixed(1)} s`),
    });
    await sql.query('VACUUM ANALYZE');
    figures['fill (s)'] = Math.round((Date.now() - started) / 1000);
    figures.commands = volumes.commands;
    figures['record versions'] = volumes.versions;

    if (e2e && e2eEmpty) {
      const seqE2e = await seqRowsRead(sql);
      const e2eFilled = await e2e.measure(samples);
      // Rows the roles read by sequential scan of the growing tables while the filled path ran.
      for (const [table, n] of Object.entries(await seqRowsRead(sql))) {
        const read = n - (seqE2e[table] ?? 0);
        if (read > 0) figures[`rows read by sequential scan, filled end to end: ${table}`] = read;
      }
      await e2e.stop();
      const stats = (t: number[]) => ({ p50: percentile(t, 50), p99: percentile(t, 99) });
      const name = 'command path end to end (webhook → Kafka → outcome)';
      report(figures, name, stats(e2eEmpty.latencies), stats(e2eFilled.latencies), over);
      figures[`${name}: outcomes missing, empty / filled`] = `${e2eEmpty.missing} / ${e2eFilled.missing}`;
    }

    const eventId = await firstValue(sql, `SELECT event_id FROM outbox ORDER BY id DESC LIMIT 1`);
    const letterId = await firstValue(sql, `SELECT id FROM dead_letters ORDER BY id LIMIT 1`);
    const emptyPaths = paths(
      await firstValue(emptySql, `SELECT event_id FROM outbox ORDER BY id DESC LIMIT 1`),
      await firstValue(emptySql, `SELECT id FROM dead_letters ORDER BY id LIMIT 1`),
    );
    const seqBefore = await seqRowsRead(sql);
    for (const [k, [name, path]] of paths(eventId, letterId).entries()) {
      const m = await measurePair([emptyDb, emptyPaths[k]![1]], [db, path], samples);
      report(figures, name, m.empty, m.filled, over);
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
    await e2e?.stop().catch(() => undefined);
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
        ? 'read paths: a schema holding only the rows looked up ("empty") and the filled one, sampled in turn (same load); the end-to-end path: before and after the fill'
        : 'read paths: a first day at the year\'s rate ("empty": the same last hour of traffic, the same 72 h outbox, a full page of open letters) and the filled year, sampled in turn (same load); BENCH_HISTORY_EMPTY=rows holds only the rows looked up, as before; the end-to-end path: before and after the fill',
    ],
  };
}
