/**
 * `npm run bench -- erase` (issue 51): erasing one person from a year of a large PMS's history (the
 * history bench's fill, test/support/history-fill.ts, plus the customers and enrollments of a year
 * of registrations in the stored list reads and the guard), dry run and for real: the time, the
 * pages the erasure touched (shared buffers hit or read, tables and indexes, from
 * pg_statio_user_tables) and the sequential scans it made of the growing tables (none: every lookup
 * is by index). BENCH_ERASE_SCALE (default 1) scales the year: 0.25 is a quarter of it.
 */
import pg from 'pg';
import { parseDatabaseUrl } from '../src/db/database-url.js';
import { createDb } from '../src/db/prisma.js';
import { erasePerson } from '../src/erasure/erase-person.js';
import { defaultTopicSettings } from '../src/kafka/topic-settings.js';
import { fillHistory, GROWING_TABLES, scaled, YEAR_OF_A_LARGE_PMS } from '../test/support/history-fill.js';
import { benchSchema } from './env.js';
import type { BenchResult } from './types.js';

/** A year of registrations beside the fill's commands: customers and their enrollments, stored reads and commands. */
async function fillPeople(sql: pg.Pool, customers: number): Promise<void> {
  await sql.query(
    `INSERT INTO snapshot_reads (key_id, resource, record_id, page, per_page, record, asked_at)
     SELECT 'deployment', 'customers', 'cus_' || i, 1 + i / 100, 100,
            jsonb_build_object('id', 'cus_' || i, 'email', 'person' || i || '@example.com', 'first_name', 'First' || i,
                               'last_name', 'Last' || i, 'phone', '555' || lpad(i::text, 7, '0'), 'updated_at', now()),
            now() - interval '1 day' * (i % 365)
       FROM generate_series(1, $1::int) i`,
    [customers],
  );
  await sql.query(
    `INSERT INTO snapshot_reads (key_id, resource, record_id, page, per_page, record, asked_at)
     SELECT 'deployment', 'enrollments', 'enr_' || i, 1 + i / 100, 100,
            jsonb_build_object('id', 'enr_' || i, 'customer_id', 'cus_' || i, 'status', 'active', 'updated_at', now()),
            now() - interval '1 day' * (i % 365)
       FROM generate_series(1, $1::int) i
     ON CONFLICT DO NOTHING`,
    [customers],
  );
  await sql.query(
    `INSERT INTO commands (source, command_id, command_type, target_id, state, payload, attempts, request_id_base,
                           request_ids, created_at, updated_at, finished_at, outcome)
     SELECT 'acme', 'reg-' || i, 'customer_registration', 'person' || i || '@example.com', 'applied',
            jsonb_build_object('registration_id', 'reg-' || i, 'email', 'person' || i || '@example.com',
                               'first_name', 'First' || i, 'last_name', 'Last' || i),
            1, 'reg-' || i, ARRAY['reg-' || i || '.a1'], now() - interval '1 day' * (i % 365),
            now() - interval '1 day' * (i % 365), now() - interval '1 day' * (i % 365),
            jsonb_build_object('status', 'applied', 'partner_customer_id', 'cus_' || i)
       FROM generate_series(1, $1::int) i`,
    [customers],
  );
}

/** Pages each table and its indexes touched so far (hit or read), and sequential scans. */
async function statio(sql: pg.Pool): Promise<{ pages: number; seqScans: Record<string, number> }> {
  // A backend reports its counts when idle, at most every 10 s (PostgreSQL 15).
  await new Promise((r) => setTimeout(r, 11_000));
  const { rows } = await sql.query<{ relname: string; pages: string; seq: string }>(
    `SELECT s.relname, coalesce(heap_blks_read, 0) + coalesce(heap_blks_hit, 0) + coalesce(idx_blks_read, 0)
            + coalesce(idx_blks_hit, 0) + coalesce(toast_blks_read, 0) + coalesce(toast_blks_hit, 0)
            + coalesce(tidx_blks_read, 0) + coalesce(tidx_blks_hit, 0) AS pages, t.seq_scan AS seq
       FROM pg_statio_user_tables s JOIN pg_stat_user_tables t USING (relid)
      WHERE s.schemaname = current_schema()`,
  );
  return {
    pages: rows.reduce((n, r) => n + Number(r.pages), 0),
    seqScans: Object.fromEntries(rows.map((r) => [r.relname, Number(r.seq)])),
  };
}

export async function run(): Promise<BenchResult> {
  const scale = Number(process.env.BENCH_ERASE_SCALE ?? 1);
  const volumes = scaled(YEAR_OF_A_LARGE_PMS, scale);
  const customers = Math.max(10, Math.round(50_000 * scale));
  const bench = await benchSchema('bench_erase');
  const { connectionString } = parseDatabaseUrl(bench.url);
  const sql = new pg.Pool({ connectionString, max: 2, options: `-c search_path=${bench.schema}` });
  const db = createDb(bench.url, { max: 2 });
  const figures: BenchResult['figures'] = { scale, customers };
  try {
    const filled = Date.now();
    await fillHistory(sql, volumes, {
      onTable: (table, ms) => console.log(`  filled ${table} in ${(ms / 1000).toFixed(0)} s`),
    });
    await fillPeople(sql, customers);
    // The planner's statistics as after a day of autovacuum, which is then kept off the counts.
    for (const table of [...GROWING_TABLES, 'snapshot_reads', 'commands'])
      await sql.query(`VACUUM ANALYZE "${table}"`).catch(() => sql.query(`ANALYZE "${table}"`));
    for (const table of GROWING_TABLES)
      await sql.query(`ALTER TABLE "${table}" SET (autovacuum_enabled = false)`);
    figures['fill (s)'] = Math.round((Date.now() - filled) / 1000);
    const { rows } = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM commands`);
    figures['commands in the year'] = Number(rows[0]!.n);

    // One person: a customer of the middle of the year (odd: the fill pays odd enrollments), its enrollment and the fill’s payments to
    // it (the fill targets enr_<i % 50000>), with their attempts, callbacks and dead letters.
    const person = Math.floor(customers / 2) | 1;
    const email = `Person${person}@Example.com`;
    for (const dryRun of [true, false]) {
      const label = dryRun ? 'dry run' : 'erasure';
      const before = await statio(sql);
      const started = performance.now();
      const receipt = await erasePerson(db, defaultTopicSettings(3), { email, dryRun, actor: 'bench' });
      figures[`${label}: time (ms)`] = Math.round(performance.now() - started);
      const after = await statio(sql);
      figures[`${label}: pages touched (shared buffers, tables + indexes)`] = after.pages - before.pages;
      const scans = GROWING_TABLES.filter((t) => (after.seqScans[t] ?? 0) > (before.seqScans[t] ?? 0));
      figures[`${label}: growing tables read by sequential scan`] = scans.length ? scans.join(', ') : 'none';
      figures[`${label}: rows erased`] = Object.values(receipt.tables).reduce((a, b) => a + b, 0);
      figures[`${label}: per table`] = Object.entries(receipt.tables)
        .filter(([, n]) => n > 0)
        .map(([t, n]) => `${t} ${n}`)
        .join(', ');
    }
  } finally {
    await db.$disconnect();
    await sql.end();
    await bench.drop();
  }
  return {
    name: 'erase',
    figures,
    notes: [
      'Pages: the shared buffers the erasure hit or read in every table and index of the schema (pg_statio_user_tables, before and after, autovacuum off on the growing tables meanwhile); a dry run does the same work and rolls it back.',
      'The person: a customer found by e-mail in the stored reads, its registration, its enrollment and the fill’s payments to that enrollment (a twentieth of a percent of the year’s).',
    ],
  };
}
