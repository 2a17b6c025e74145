/**
 * `npm run bench -- overview` (issue 19): what one refresh of the console's overview costs
 * PostgreSQL at BENCH_OVERVIEW_OUTBOX (100,000) outbox rows and BENCH_OVERVIEW_LETTERS (10,000)
 * dead letters, with as many webhook receipts, half as many commands and their attempts, spread
 * over the outbox's 72 h retention (a few thousand in the last hour). Also one trace look-up.
 * Figures: queries per refresh, time per refresh (median, p95 of 30), trace time.
 * BENCH_OVERVIEW_KEEP=1 keeps the schema (named in the output) to EXPLAIN its queries.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Registry } from 'prom-client';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { createDb } from '../src/db/prisma.js';
import { SnapshotRing } from '../src/ops/overview/metric-samples.js';
import { buildOverview } from '../src/ops/overview/overview.js';
import { traceId } from '../src/event-trace/trace.js';
import { databaseBase } from './env.js';
import type { BenchResult } from './types.js';

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

export async function run(): Promise<BenchResult> {
  const outboxRows = Number(process.env.BENCH_OVERVIEW_OUTBOX ?? 100_000);
  const letters = Number(process.env.BENCH_OVERVIEW_LETTERS ?? 10_000);
  const base = databaseBase();
  const schema = `bench_overview_${randomBytes(4).toString('hex')}`;
  const url = withSchema(base, schema);
  await migrate(url);
  const { connectionString } = parseDatabaseUrl(url);
  const sql = new pg.Pool({ connectionString, max: 2, options: `-c search_path=${schema}` });
  const db = createDb(url, { max: 5 });
  try {
    // Rows spread over 72 h; the newest ~4 % (≈ 3 h worth) fall in the last hour.
    await sql.query(
      `INSERT INTO outbox (event_id, topic, key, type, source, subject, data, headers, created_at, published_at)
       SELECT gen_random_uuid(),
              CASE WHEN i % 3 = 0 THEN 'commands.rental-payments' WHEN i % 3 = 1 THEN 'commands.application-decisions'
                   ELSE 'partner.applications' END,
              'key-' || (i % 5000), 't', '/bench', 'cmd-' || i, '{}', jsonb_build_object('webhook-id', 'msg_' || i),
              now() - (($1 - i) * interval '72 hours' / $1),
              CASE WHEN i > $1 - 50 THEN NULL ELSE now() - (($1 - i) * interval '72 hours' / $1) + interval '20 ms' END
         FROM generate_series(1, $1) AS i`,
      [outboxRows],
    );
    await sql.query(
      `INSERT INTO webhook_receipts (source, webhook_id, event_type, received_at, outbox_id)
       SELECT 'pms:acme', 'msg_' || id, 'rent_payment.received', created_at, id FROM outbox`,
    );
    await sql.query(
      `INSERT INTO commands (source, command_id, command_type, target_id, state, payload, attempts, request_id_base, request_ids, created_at, updated_at, finished_at)
       SELECT 'acme', subject, 'rental_payment', key, CASE WHEN id % 50 = 0 THEN 'rejected' ELSE 'applied' END, '{}', 1,
              subject, ARRAY[subject || '.a1'], created_at, created_at + interval '50 ms', created_at + interval '50 ms'
         FROM outbox WHERE topic LIKE 'commands.%' AND published_at IS NOT NULL`,
    );
    await sql.query(
      `INSERT INTO command_attempts (source, command_type, command_id, attempt, request_id, kind, started_at, finished_at, result, status)
       SELECT source, command_type, command_id, 1, command_id || '.a1', 'write', created_at + interval '10 ms', finished_at,
              CASE WHEN state = 'applied' THEN 'applied' ELSE 'rejected' END, CASE WHEN state = 'applied' THEN 201 ELSE 409 END
         FROM commands`,
    );
    await sql.query(
      `INSERT INTO dead_letters (dlq_topic, partition, "offset", key, value, headers, original_topic, reason, error_code,
              error_status, error_message, command_id, partner_request_ids, state, indexed_at, last_failure_at)
       SELECT 'commands.rental-payments.dlq', 0, i::text, 'key-' || i, '{}', '{}', 'commands.rental-payments',
              (ARRAY['rejected','exhausted','unverified','invalid_message'])[1 + i % 4], 'invalid_state_transition', 409,
              'refused', 'cmd-' || (i * 3), ARRAY['cmd-' || (i * 3) || '.a1'],
              CASE WHEN i % 5 = 0 THEN 'open' ELSE 'redriven' END,
              now() - (($1 - i) * interval '30 days' / $1), now() - (($1 - i) * interval '30 days' / $1)
         FROM generate_series(1, $1) AS i`,
      [letters],
    );
    await sql.query(
      `INSERT INTO poller_cursors (resource, last_started_at, last_succeeded_at)
       SELECT r, now(), now() - interval '1 minute' FROM unnest(ARRAY['applications','enrollments','customers']) AS r`,
    );
    // Their successful passes of the last hour or so, one per 5 minutes (what the poller keeps).
    await sql.query(
      `INSERT INTO poller_passes (resource, succeeded_at)
       SELECT r, now() - interval '1 minute' - i * interval '5 minutes'
         FROM unnest(ARRAY['applications','enrollments','customers']) AS r, generate_series(0, 13) AS i`,
    );
    await sql.query('ANALYZE');

    const ring = new SnapshotRing();
    const registry = new Registry();
    const deps = { db, registry, ring, topicPrefix: '' };
    await buildOverview(deps); // warm the pool
    const times: number[] = [];
    let queries = 0;
    for (let i = 0; i < 30; i++) {
      const started = performance.now();
      const o = await buildOverview(deps);
      times.push(performance.now() - started);
      queries = o.cost.queries;
    }
    const traceTimes: number[] = [];
    for (const id of ['msg_90000', 'cmd-90000', 'cmd-90000.a1', String(Math.floor(letters / 2))]) {
      const started = performance.now();
      await traceId(db, id, { topicPrefix: '', retentionHours: 72 });
      traceTimes.push(performance.now() - started);
    }
    const counts = (
      await sql.query<{ c: string; l: string }>(
        `SELECT (SELECT count(*) FROM commands) AS c, (SELECT count(*) FROM outbox WHERE published_at > now() - interval '1 hour') AS l`,
      )
    ).rows[0]!;
    return {
      name: 'overview',
      figures: {
        'outbox rows': outboxRows,
        'dead letters': letters,
        'webhook receipts': outboxRows,
        'commands (and as many attempts)': Number(counts.c),
        'outbox rows published in the last hour': Number(counts.l),
        'SQL statements per refresh': queries,
        'refresh, median (ms)': percentile(times, 50),
        'refresh, p95 (ms)': percentile(times, 95),
        'one trace look-up, median of 4 ids (ms)': percentile(traceTimes, 50),
        'one trace look-up, slowest (ms)': Math.max(...traceTimes),
      },
      notes: ['The console refreshes the overview every 10 s while it is shown, and not at all otherwise.'],
    };
  } finally {
    await db.$disconnect();
    if (process.env.BENCH_OVERVIEW_KEEP === '1') console.log(`kept schema ${schema}`);
    else await sql.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await sql.end();
  }
}
