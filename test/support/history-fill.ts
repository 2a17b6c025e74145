import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@prisma/client';
import type pg from 'pg';
import { parseDatabaseUrl } from '../../src/db/database-url.js';
import { RETAINED_TABLES } from '../../src/retention/retention-rules.js';

/**
 * Fills rentbridge's growing tables with a span of history, server-side (generate_series), with
 * column values shaped like the flow's own: commands of a few PMS sources with their Partner
 * request ids, two guard attempts each, an outcome callback each, versions of applications and
 * enrollments with their known state and stored list read, dead letters with their headers, audit
 * entries. Times are spread evenly over the
 * span, oldest first. Used by the EXPLAIN test (test/retention/lookups-explain.test.ts) and the
 * history bench (bench/history.ts).
 *
 * Ids are `h<i>`-based and unique per call through `tag`, so two fills of one schema never collide.
 */
/**
 * The tables that grow with time: every table the retention pruner owns (its rules), and the
 * outbox and webhook receipts (pruned by the relay and receiver). The EXPLAIN test fails on a
 * sequential scan of one; the history bench counts the rows read from them by sequential scan.
 */
export const GROWING_TABLES: readonly string[] = [...RETAINED_TABLES, 'outbox', 'webhook_receipts'];

/** The first column of the first row a query answers, as text (an id to look up). */
export async function firstValue(sql: pg.Pool | pg.PoolClient, text: string): Promise<string> {
  return String(Object.values((await sql.query(text)).rows[0] as object)[0]);
}

export interface HistoryVolumes {
  commands: number;
  /** Published versions (records: a third of them, so most records have three versions). */
  versions: number;
  deadLetters: number;
  audit: number;
  /** Outbox rows and webhook receipts (kept OUTBOX_RETENTION_HOURS in production). */
  outbox: number;
}

/** A large PMS's year (issue 42): 1.02M commands, 2.04M attempts, 1.02M callbacks, 3.06M versions. */
export const YEAR_OF_A_LARGE_PMS: HistoryVolumes = {
  commands: 1_020_000,
  versions: 3_060_000,
  deadLetters: 20_000,
  audit: 40_000,
  outbox: 200_000,
};

export function scaled(v: HistoryVolumes, scale: number): HistoryVolumes {
  const s = (n: number) => Math.max(1, Math.round(n * scale));
  return {
    commands: s(v.commands),
    versions: s(v.versions),
    deadLetters: s(v.deadLetters),
    audit: s(v.audit),
    outbox: s(v.outbox),
  };
}

/** `age(i, n)`: the i-th of n rows' distance in time from now, the oldest first, over `spanDays`. */
const age = (i: string, n: string) => `(interval '1 day' * $2::float8 * (1 - ${i}::float8 / ${n}))`;

/**
 * One statement per table, each committed on its own (progress through `onTable`). `spanDays` is
 * how far back the oldest row is; `tag` keeps the ids of one fill apart from another's.
 */
export async function fillHistory(
  sql: pg.Pool | pg.PoolClient,
  volumes: HistoryVolumes,
  options: { spanDays?: number; tag?: string; onTable?: (table: string, ms: number) => void } = {},
): Promise<void> {
  const span = options.spanDays ?? 365;
  const tag = options.tag ?? 'h';
  const steps: Array<[string, string, unknown[]]> = [
    [
      'commands',
      `INSERT INTO commands (source, command_id, command_type, target_id, state, payload, snapshot, attempts,
                             request_id_base, request_ids, created_at, updated_at, finished_at, outcome)
       SELECT s.src, $1 || '-pay-' || i, CASE WHEN i % 4 = 0 THEN 'application_decision' ELSE 'rental_payment' END,
              CASE WHEN i % 4 = 0 THEN 'app_' ELSE 'enr_' END || (i % 50000),
              CASE WHEN i % 500 = 0 THEN 'unverified' WHEN i % 50 = 0 THEN 'rejected' ELSE 'applied' END,
              jsonb_build_object('amount_cents', 120000 + i % 5000, 'paid_on', to_char(now() - t.a, 'YYYY-MM-DD')),
              jsonb_build_object('status', 'active', 'updated_at', now() - t.a - interval '1 minute'), 1,
              $1 || '-pay-' || i, ARRAY[$1 || '-pay-' || i || '.a1'],
              now() - t.a, now() - t.a, now() - t.a,
              jsonb_build_object('status', 'applied', 'command_id', $1 || '-pay-' || i)
         FROM generate_series(1, $3::int) i
         CROSS JOIN LATERAL (SELECT ${age('i', '$3')} AS a) t
         CROSS JOIN LATERAL (SELECT (ARRAY['acme', 'birch', 'cedar'])[1 + i % 3] AS src) s`,
      [tag, span, volumes.commands],
    ],
    [
      'command_attempts',
      `INSERT INTO command_attempts (source, command_type, command_id, attempt, request_id, kind, started_at,
                                     finished_at, result, status)
       SELECT c.source, c.command_type, c.command_id, k, c.request_id_base || '.a1' || CASE WHEN k = 2 THEN '.r1' ELSE '' END,
              CASE WHEN k = 1 THEN 'write' ELSE 'read_back' END, c.created_at, c.created_at + interval '200 ms',
              'applied', 200
         FROM commands c CROSS JOIN generate_series(1, 2) k
        WHERE c.command_id LIKE $1 || '-pay-%'`,
      [tag],
    ],
    [
      'callback_deliveries',
      `INSERT INTO callback_deliveries (source, webhook_id, event_id, event_type, command_type, command_id,
                                        outcome_status, payload, state, attempts, created_at, delivered_at,
                                        dead_at, next_attempt_at, retry_from)
       SELECT c.source, 'msg_' || c.command_id, gen_random_uuid()::text, 'rentbridge.outcome.' || c.command_type,
              c.command_type, c.command_id, c.state, '{"specversion":"1.0"}',
              CASE WHEN c.state = 'unverified' THEN 'dead' ELSE 'delivered' END, 1,
              c.finished_at, CASE WHEN c.state = 'unverified' THEN NULL ELSE c.finished_at + interval '1 second' END,
              CASE WHEN c.state = 'unverified' THEN least(now(), c.finished_at + interval '1 day') END,
              c.finished_at, c.finished_at
         FROM commands c WHERE c.command_id LIKE $1 || '-pay-%'`,
      [tag],
    ],
    [
      'callback_attempts',
      `INSERT INTO callback_attempts (delivery_id, at, url, result, http_status, duration_ms)
       SELECT d.id, coalesce(d.delivered_at, d.created_at), 'https://pms.example/outcomes',
              CASE WHEN d.state = 'delivered' THEN 'delivered' ELSE 'failed' END, 200, 40
         FROM callback_deliveries d WHERE d.command_id LIKE $1 || '-pay-%'`,
      [tag],
    ],
    [
      'published_versions',
      `INSERT INTO published_versions (resource, record_id, updated_at, via, published_at)
       SELECT CASE WHEN i % 2 = 0 THEN 'applications' ELSE 'enrollments' END, $1 || '_rec_' || (i % ($3::int / 3 + 1)),
              to_char((now() - t.a) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
              CASE WHEN i % 3 = 0 THEN 'poller' ELSE 'webhook' END, now() - t.a
         FROM generate_series(1, $3::int) i CROSS JOIN LATERAL (SELECT ${age('i', '$3')} AS a) t
       ON CONFLICT DO NOTHING`,
      [tag, span, volumes.versions],
    ],
    [
      'known_records',
      `INSERT INTO known_records (resource, record_id, updated_at, status, removed_at, seen_at)
       SELECT DISTINCT ON (resource, record_id) resource, record_id, updated_at, 'active',
              CASE WHEN hashtext(record_id) % 20 = 0 THEN published_at END, published_at
         FROM published_versions WHERE record_id LIKE $1 || '_rec_%'
        ORDER BY resource, record_id, updated_at DESC
       ON CONFLICT DO NOTHING`,
      [tag],
    ],
    [
      // The latest list read of each record (the guard's snapshot), read by the poller's passes.
      'snapshot_reads',
      `INSERT INTO snapshot_reads (key_id, resource, record_id, page, per_page, record, asked_at)
       SELECT 'deployment', resource, record_id, 1 + (row_number() OVER (ORDER BY record_id))::int / 100, 100,
              jsonb_build_object('id', record_id, 'status', status, 'updated_at', updated_at), seen_at
         FROM known_records WHERE record_id LIKE $1 || '_rec_%'
       ON CONFLICT DO NOTHING`,
      [tag],
    ],
    [
      'dead_letters',
      `INSERT INTO dead_letters (dlq_topic, partition, "offset", key, value, headers, original_topic, reason,
                                 error_code, error_status, error_message, command_id, command_source, command_type,
                                 partner_request_ids, attempts, first_failure_at, last_failure_at, state,
                                 resolved_at, resolution, indexed_at)
       SELECT 'commands.rental-payments.dlq', 0, $1 || i, 'enr_' || (i % 50000),
              jsonb_build_object('specversion', '1.0', 'type', 'rentbridge.command.rental_payment',
                                 'id', $1 || '-dl-' || i, 'source', 'acme',
                                 'data', jsonb_build_object('payment_id', $1 || '-dl-' || i,
                                                            'enrollment_id', 'enr_' || (i % 50000),
                                                            'amount_cents', 120000 + i % 5000))::text,
              jsonb_build_object('webhook-id', $1 || '-wh-' || i, 'ce_id', gen_random_uuid()::text,
                                 'ce_type', 'rentbridge.command.rental_payment'),
              'commands.rental-payments', CASE WHEN i % 2 = 0 THEN 'partner_rejected' ELSE 'unverified' END,
              'invalid_state_transition', 409,
              'Enrollment enr_' || (i % 50000) || ' is ended; payments are not accepted',
              $1 || '-dl-' || i, 'acme', 'rental_payment',
              ARRAY[$1 || '-dl-' || i || '.a1'], 1, now() - t.a, now() - t.a,
              CASE WHEN i % 10 = 0 THEN 'open' ELSE 'discarded' END,
              CASE WHEN i % 10 = 0 THEN NULL ELSE now() - t.a + interval '1 hour' END,
              CASE WHEN i % 10 = 0 THEN NULL ELSE 'duplicate payment' END, now() - t.a
         FROM generate_series(1, $3::int) i CROSS JOIN LATERAL (SELECT ${age('i', '$3')} AS a) t`,
      [tag, span, volumes.deadLetters],
    ],
    [
      'audit_log',
      `INSERT INTO audit_log (at, actor, action, target, reason, details)
       SELECT now() - t.a, 'ops:alice', 'discard', 'dead-letter:' || $1 || i, 'duplicate payment',
              jsonb_build_object('commandId', $1 || '-dl-' || i)
         FROM generate_series(1, $3::int) i CROSS JOIN LATERAL (SELECT ${age('i', '$3')} AS a) t`,
      [tag, span, volumes.audit],
    ],
    [
      'outbox',
      `INSERT INTO outbox (event_id, topic, key, type, source, subject, data, headers, created_at, published_at)
       SELECT gen_random_uuid(), 'partner.applications', $1 || '_rec_' || i, 'partner.application.updated',
              '/webhooks/partner', $1 || '_rec_' || i, '{"status":"active"}',
              jsonb_build_object('webhook-id', $1 || '-ob-' || i), now() - t.a, now() - t.a
         FROM generate_series(1, $2::int) i CROSS JOIN LATERAL (SELECT (interval '1 hour' * 72 * (1 - i::float8 / $2)) AS a) t`,
      [tag, volumes.outbox],
    ],
    [
      'webhook_receipts',
      `INSERT INTO webhook_receipts (source, webhook_id, event_type, received_at, outbox_id)
       SELECT '/webhooks/partner', o.headers->>'webhook-id', o.type, o.created_at, o.id
         FROM outbox o WHERE o.key LIKE $1 || '_rec_%' AND o.headers ? 'webhook-id'
       ON CONFLICT DO NOTHING`,
      [tag],
    ],
  ];
  // The rows are consistent by construction: where the role may (a superuser, as in tests and the
  // bench), the foreign keys' checks are skipped. Each is one lookup per row, queued to the end of
  // its statement; on a loaded machine they made a quarter of a year's attempts take over 20 min.
  const client = 'release' in sql ? sql : await sql.connect();
  const replica = await client.query(`SET session_replication_role = replica`).then(
    () => true,
    () => false,
  );
  try {
    for (const [table, text, params] of steps) {
      const started = Date.now();
      await client.query(text, params);
      options.onTable?.(table, Date.now() - started);
    }
  } finally {
    if (replica) await client.query(`RESET session_replication_role`);
    if (client !== sql) client.release();
  }
}

/** A statement a client sent, as it sent it. */
export interface Statement {
  query: string;
  params: unknown[];
}

/**
 * A Prisma client on `url`'s schema that keeps every statement it sends in `statements`, for
 * EXPLAIN: what the lookups test, the console-pages test and the history bench read.
 */
export function capturingDb(url: string) {
  const { connectionString, schema } = parseDatabaseUrl(url);
  const statements: Statement[] = [];
  const db = new PrismaClient({
    adapter: new PrismaPg({ connectionString, max: 2, options: `-c search_path=${schema}` }, { schema }),
    log: [{ emit: 'event', level: 'query' }],
  });
  db.$on('query', (e) => statements.push({ query: e.query, params: JSON.parse(e.params) as unknown[] }));
  return { db, statements };
}
