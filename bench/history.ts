/**
 * `npm run bench -- history` (issue 42): the read paths and the command path with a year of a large
 * PMS in the tables, against the same schema empty. The year: 1.02M commands (two guard attempts
 * and one outcome callback each, with its attempt), 3.06M record versions, 20,000 dead letters,
 * 40,000 audit entries, spread over 365 days (test/support/history-fill.ts). BENCH_HISTORY_SCALE
 * (default 1) scales every volume: 0.02 is a fiftieth.
 *
 * Figures, p50 / p99 of BENCH_HISTORY_SAMPLES (default 50) calls each, empty then filled:
 * - the command path's database work: the guard's rows of one command (ensure, in_flight with its
 *   attempt, applied, outcome) and its callback delivery: what the webhook → outcome path writes
 *   and reads in PostgreSQL (the Kafka hops do not depend on the tables' size and are not run here);
 * - the PMS status call (one command; the list of the last hour), the trace by each kind of id,
 *   one overview refresh, the dead-letter list, the callbacks' status: the functions the HTTP
 *   routes call;
 * - storage per month of operation (table and indexes), from PostgreSQL's sizes after the fill;
 * - the command path while a backlog past the retention (the fill's older half, under
 *   BENCH_HISTORY_RETENTION_DAYS, default 182) is pruned by the retention pruner at its defaults.
 *
 * BENCH_HISTORY_BEFORE=1 drops the indexes of migration 20261127100000 first: the figures before it.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Registry } from 'prom-client';
import { listDeliveries, insertDeliveries, queueBySource } from '../src/callbacks/callback-repository.js';
import { loadConfig } from '../src/config/config.js';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { createDb, type Db } from '../src/db/prisma.js';
import { countDeadLetters, searchDeadLetters } from '../src/dead-letters/dead-letter-repository.js';
import { createCommandRepository } from '../src/guard/command-repository.js';
import { createLogger } from '../src/logger.js';
import { SnapshotRing } from '../src/ops/overview/metric-samples.js';
import { buildOverview } from '../src/ops/overview/overview.js';
import { createCommandStatusRepository } from '../src/pms/command-status-repository.js';
import { createRetentionPruner } from '../src/retention/retention-pruner.js';
import { retentionRules } from '../src/retention/retention-rules.js';
import { tableStorage } from '../src/retention/retention-repository.js';
import { traceId } from '../src/trace/trace.js';
import { fillHistory, scaled, YEAR_OF_A_LARGE_PMS } from '../test/support/history-fill.js';
import type { BenchResult } from './types.js';

type Path = [string, (db: Db, i: number) => Promise<unknown>];

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

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

async function measure(db: Db, path: Path[1], samples: number): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    await path(db, i);
    times.push(performance.now() - started);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
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
  const volumes = scaled(YEAR_OF_A_LARGE_PMS, scale);
  const base = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
  const schema = `bench_history_${randomBytes(4).toString('hex')}`;
  const url = withSchema(base, schema);
  await migrate(url);
  const { connectionString } = parseDatabaseUrl(url);
  const sql = new pg.Pool({ connectionString, max: 2, options: `-c search_path=${schema}` });
  const db = createDb(url, { max: 5 });
  const figures: BenchResult['figures'] = {
    scale,
    samples,
    'indexes of migration 20261127100000': before ? 'dropped (before)' : 'present',
  };
  try {
    if (before) await dropNewIndexes(sql);
    const empty: Record<string, { p50: number; p99: number }> = {};
    for (const [name, path] of paths('00000000-0000-0000-0000-000000000000', '1'))
      empty[name] = await measure(db, path, samples);

    const started = Date.now();
    await fillHistory(sql, volumes, {
      onTable: (t, ms) => console.log(`  filled ${t} in ${(ms / 1000).toFixed(1)} s`),
    });
    await sql.query('VACUUM ANALYZE');
    figures['fill (s)'] = Math.round((Date.now() - started) / 1000);
    figures.commands = volumes.commands;
    figures['record versions'] = volumes.versions;
    const one = async (text: string) => String(Object.values((await sql.query(text)).rows[0] as object)[0]);
    const eventId = await one(`SELECT event_id FROM outbox ORDER BY id DESC LIMIT 1`);
    const letterId = await one(`SELECT id FROM dead_letters ORDER BY id LIMIT 1`);
    const seqBefore = await seqRowsRead(sql);
    for (const [name, path] of paths(eventId, letterId)) {
      const filled = await measure(db, path, samples);
      const e = empty[name]!;
      figures[`${name}: p50 / p99 ms, empty`] = `${e.p50.toFixed(1)} / ${e.p99.toFixed(1)}`;
      figures[`${name}: p50 / p99 ms, filled`] = `${filled.p50.toFixed(1)} / ${filled.p99.toFixed(1)}`;
      figures[`${name}: p99 filled / empty`] = (filled.p99 / Math.max(e.p99, 0.001)).toFixed(2);
    }
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
    await storagePerMonth(db, figures);
    await pruningUnderLoad(db, samples, retentionDays, figures);
  } finally {
    await db.$disconnect();
    await sql.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await sql.end();
  }
  return {
    name: 'history',
    figures,
    notes: [
      `volumes at scale ${scale}: ${JSON.stringify(volumes)} (a large PMS's year at scale 1), spread over 365 days`,
      'the command path is its PostgreSQL work (guard rows and callback delivery); Kafka hops are the same at any table size',
    ],
  };
}

const GROWING = [
  'commands',
  'command_attempts',
  'published_versions',
  'known_records',
  'dead_letters',
  'audit_log',
  'callback_deliveries',
  'callback_attempts',
  'outbox',
  'webhook_receipts',
];

/** seq_tup_read of each growing table of the schema (the statistics collector's, flushed first). */
async function seqRowsRead(sql: pg.Pool): Promise<Record<string, number>> {
  // A backend reports its counts when idle, at most every 10 s (PostgreSQL 15).
  await new Promise((r) => setTimeout(r, 11_000));
  const { rows } = await sql.query<{ relname: string; n: string }>(
    `SELECT relname, seq_tup_read AS n FROM pg_stat_user_tables
      WHERE schemaname = current_schema() AND relname = ANY($1::text[])`,
    [GROWING],
  );
  return Object.fromEntries(rows.map((r) => [r.relname, Number(r.n)]));
}

/** Storage per month: each table's size (table + indexes) after the fill of a year, over 12. */
async function storagePerMonth(db: Db, figures: BenchResult['figures']): Promise<void> {
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
async function pruningUnderLoad(
  db: Db,
  samples: number,
  retentionDays: number,
  figures: BenchResult['figures'],
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
