import { beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { createDb } from '../../src/db/prisma.js';
import { createLogger } from '../../src/logger.js';
import { registry } from '../../src/metrics.js';
import { createRetentionPruner, type RetentionPrunerOptions } from '../../src/retention/retention-pruner.js';
import { RETAINED_TABLES, retentionRules } from '../../src/retention/retention-rules.js';
import { tableStorage } from '../../src/retention/retention-repository.js';
import { useTestDatabase } from '../support/db.js';

/**
 * Every table within its retention (issue 42): the pruner runs with its clock moved forward, as if
 * the rows had aged, and each table keeps exactly what its promise needs.
 */
const DAY = 86_400_000;
const logger = createLogger({ level: 'silent' });
/** The defaults: 90 days of commands and resolved letters, 30 of callbacks and versions, 400 of audit. */
const rules = retentionRules(loadConfig({}));

describe('the retention pruner', () => {
  const database = useTestDatabase();
  beforeEach(async () => {
    await database.sql.query(
      `TRUNCATE commands, command_attempts, published_versions, known_records, dead_letters, audit_log,
                callback_deliveries, callback_attempts, retention_state RESTART IDENTITY CASCADE`,
    );
  });

  const q = async (text: string, params: unknown[] = []) => (await database.sql.query(text, params)).rows;
  const ids = async (text: string) => (await q(text)).map((r) => Object.values(r as object)[0]);
  const pruner = (over: Partial<RetentionPrunerOptions> = {}) =>
    createRetentionPruner({ db: database.db, logger, rules, ...over });

  /** A command of `state` that finished `daysAgo` days ago, with two guard attempts. */
  async function command(id: string, state: string, daysAgo: number): Promise<void> {
    await q(
      `INSERT INTO commands (source, command_id, command_type, target_id, state, payload, request_id_base,
                             request_ids, created_at, updated_at, finished_at)
       VALUES ('acme', $1, 'rental_payment', 'enr_1', $2, '{}', $1, ARRAY[$1 || '.a1'],
               now() - $3 * interval '1 day', now() - $3 * interval '1 day',
               CASE WHEN $2 IN ('pending', 'in_flight') THEN NULL ELSE now() - $3 * interval '1 day' END)`,
      [id, state, daysAgo],
    );
    await q(
      `INSERT INTO command_attempts (source, command_type, command_id, attempt, request_id, kind, started_at)
       SELECT 'acme', 'rental_payment', $1, k, $1 || '.a' || k, 'write', now() - $2 * interval '1 day'
         FROM generate_series(1, 2) k`,
      [id, daysAgo],
    );
  }

  async function letter(
    id: string,
    state: string,
    daysAgo: number,
    commandId: string | null = null,
  ): Promise<void> {
    await q(
      `INSERT INTO dead_letters (dlq_topic, partition, "offset", value, headers, command_id, command_source, state,
                                 resolved_at, indexed_at)
       VALUES ('commands.rental-payments.dlq', 0, $1, '{}', '{}', $4, 'acme', $2,
               CASE WHEN $2 = 'open' THEN NULL ELSE now() - $3 * interval '1 day' END, now() - $3 * interval '1 day')`,
      [id, state, daysAgo, commandId],
    );
  }

  async function delivery(id: string, state: string, daysAgo: number): Promise<void> {
    await q(
      `WITH d AS (
         INSERT INTO callback_deliveries (source, webhook_id, event_id, event_type, command_type, command_id,
                                          outcome_status, payload, state, created_at, delivered_at)
         VALUES ('acme', $1, $1, 'outcome', 'rental_payment', $1, 'applied', '{}', $2, now() - $3 * interval '1 day',
                 CASE WHEN $2 = 'delivered' THEN now() - $3 * interval '1 day' END)
         RETURNING id, created_at)
       INSERT INTO callback_attempts (delivery_id, at, url, result, duration_ms)
       SELECT id, created_at, 'https://pms.example/outcomes', 'failed', 10 FROM d`,
      [id, state, daysAgo],
    );
  }

  describe('when commands have aged past their horizon', () => {
    it('prunes a final command and its attempts, and keeps an unverified, in-flight or pending one of the same age', async () => {
      await command('old-applied', 'applied', 100);
      await command('old-rejected', 'rejected', 100);
      await command('old-unverified', 'unverified', 100);
      await command('old-in-flight', 'in_flight', 100);
      await command('old-pending', 'pending', 100);
      await command('recent-applied', 'applied', 10);
      // An exhausted command whose dead letter is still open: a redrive needs its guard row.
      await command('old-exhausted', 'exhausted', 100);
      await letter('1', 'open', 100, 'old-exhausted');

      const pass = await pruner().runPass();

      expect(await ids('SELECT command_id FROM commands ORDER BY command_id')).toEqual([
        'old-exhausted',
        'old-in-flight',
        'old-pending',
        'old-unverified',
        'recent-applied',
      ]);
      expect(await ids('SELECT DISTINCT command_id FROM command_attempts ORDER BY 1')).toEqual([
        'old-exhausted',
        'old-in-flight',
        'old-pending',
        'old-unverified',
        'recent-applied',
      ]);
      expect(pass.deleted.commands).toBe(2);
    });

    it('prunes a command that was kept as long as the horizon once the clock moves past it', async () => {
      await command('recent-applied', 'applied', 10);
      await command('recent-unverified', 'unverified', 10);
      await pruner({ now: () => Date.now() + 85 * DAY }).runPass();
      expect(await ids('SELECT command_id FROM commands ORDER BY 1')).toEqual(['recent-unverified']);
    });
  });

  describe('when dead letters have aged', () => {
    it('prunes resolved letters past the horizon and keeps open ones whatever their age', async () => {
      await letter('1', 'open', 400);
      await letter('2', 'discarded', 100);
      await letter('3', 'redriven', 100);
      await letter('4', 'discarded', 10);
      await pruner().runPass();
      expect(await ids(`SELECT "offset" FROM dead_letters ORDER BY id`)).toEqual(['1', '4']);
    });
  });

  describe('when callbacks have aged', () => {
    it('prunes a delivered callback and its attempts, and keeps a pending or dead one', async () => {
      await delivery('delivered-old', 'delivered', 40);
      await delivery('pending-old', 'pending', 40);
      await delivery('dead-old', 'dead', 40);
      await delivery('delivered-recent', 'delivered', 5);
      await pruner().runPass();
      expect(await ids('SELECT webhook_id FROM callback_deliveries ORDER BY id')).toEqual([
        'pending-old',
        'dead-old',
        'delivered-recent',
      ]);
      expect((await q('SELECT count(*)::int AS n FROM callback_attempts'))[0]).toEqual({ n: 3 });
    });
  });

  describe('when record versions and known records have aged', () => {
    it("prunes superseded versions and long-removed records, and keeps a present record's current version", async () => {
      await q(`INSERT INTO published_versions (resource, record_id, updated_at, via, published_at) VALUES
        ('applications', 'app_1', '2025-01-01T00:00:00Z', 'poller', now() - interval '200 days'),
        ('applications', 'app_1', '2025-02-01T00:00:00Z', 'poller', now() - interval '170 days'),
        ('applications', 'app_1', '2026-11-20T00:00:00Z', 'webhook', now() - interval '7 days'),
        ('applications', 'app_2', '2025-01-01T00:00:00Z', 'poller', now() - interval '200 days'),
        ('applications', 'app_3', '2025-01-01T00:00:00Z', 'poller', now() - interval '200 days')`);
      await q(`INSERT INTO known_records (resource, record_id, updated_at, status, removed_at) VALUES
        ('applications', 'app_1', '2026-11-20T00:00:00Z', 'approved', NULL),
        ('applications', 'app_2', '2025-01-01T00:00:00Z', 'pending', NULL),
        ('applications', 'app_3', '2025-01-01T00:00:00Z', 'pending', now() - interval '60 days')`);
      await pruner().runPass();
      expect(await q('SELECT record_id, updated_at FROM published_versions ORDER BY 1, 2')).toEqual([
        { record_id: 'app_1', updated_at: '2026-11-20T00:00:00Z' },
        { record_id: 'app_2', updated_at: '2025-01-01T00:00:00Z' },
      ]);
      expect(await ids('SELECT record_id FROM known_records ORDER BY 1')).toEqual(['app_1', 'app_2']);
    });
  });

  describe('when the audit trail has aged', () => {
    it('deletes only an oldest-first prefix by id, never a hole, and always keeps the newest entry', async () => {
      // ids 1..6: old, old, recent, old (written late, an out-of-order clock), recent, recent.
      for (const days of [500, 450, 10, 420, 5, 1]) {
        await q(
          `INSERT INTO audit_log (at, actor, action, target) VALUES (now() - $1 * interval '1 day', 'ops', 'discard', 't')`,
          [days],
        );
      }
      await pruner().runPass();
      expect(await ids('SELECT id::int FROM audit_log ORDER BY id')).toEqual([3, 4, 5, 6]);
      // Everything old: all but the newest go.
      await pruner({ now: () => Date.now() + 1000 * DAY }).runPass();
      expect(await ids('SELECT id::int FROM audit_log ORDER BY id')).toEqual([6]);
    });
  });

  describe('when a prune is interrupted halfway', () => {
    it('goes on where it stopped on the next pass, counting every row once', async () => {
      for (let i = 0; i < 35; i++) await delivery(`d${i}`, 'delivered', 40);
      const first = await pruner({ chunkRows: 10, maxChunksPerPass: 1 }).runPass();
      expect(first.deleted.callback_deliveries).toBe(10);
      expect(first.behind).toContain('callback_deliveries');
      let state = await q(
        `SELECT pruned_total::int, behind FROM retention_state WHERE table_name = 'callback_deliveries'`,
      );
      expect(state).toEqual([{ pruned_total: 10, behind: true }]);

      // Another process (another client) takes over, as after a crash of the first.
      const other = createDb(database.url, { max: 2 });
      try {
        const second = await createRetentionPruner({ db: other, logger, rules, chunkRows: 10 }).runPass();
        expect(second.deleted.callback_deliveries).toBe(25);
        expect(second.behind).toEqual([]);
      } finally {
        await other.$disconnect();
      }
      expect((await q('SELECT count(*)::int AS n FROM callback_deliveries'))[0]).toEqual({ n: 0 });
      state = await q(
        `SELECT pruned_total::int, behind FROM retention_state WHERE table_name = 'callback_deliveries'`,
      );
      expect(state).toEqual([{ pruned_total: 35, behind: false }]);
    });
  });

  describe('when two processes prune at once', () => {
    it('neither blocks the other and no row is counted twice', async () => {
      await q(`INSERT INTO audit_log (at, actor, action, target)
               SELECT now() - interval '500 days' + i * interval '1 second', 'ops', 'discard', 't' || i
                 FROM generate_series(1, 600) i`);
      await q(`INSERT INTO dead_letters (dlq_topic, partition, "offset", value, headers, state, resolved_at)
               SELECT 't.dlq', 0, i::text, '{}', '{}', 'discarded', now() - interval '200 days'
                 FROM generate_series(1, 600) i`);
      const dbs = [createDb(database.url, { max: 2 }), createDb(database.url, { max: 2 })];
      try {
        const passes = await Promise.all(
          dbs.map((db) =>
            createRetentionPruner({ db, logger, rules, chunkRows: 20, maxChunksPerPass: 1000 }).runPass(),
          ),
        );
        const sum = (t: 'audit_log' | 'dead_letters') => passes.reduce((n, p) => n + p.deleted[t], 0);
        // 599: the newest audit entry always stays.
        expect(sum('audit_log')).toBe(599);
        expect(sum('dead_letters')).toBe(600);
      } finally {
        await Promise.all(dbs.map((db) => db.$disconnect()));
      }
      expect(
        await q(`SELECT table_name, pruned_total::int FROM retention_state
                       WHERE table_name IN ('audit_log', 'dead_letters') ORDER BY 1`),
      ).toEqual([
        { table_name: 'audit_log', pruned_total: 599 },
        { table_name: 'dead_letters', pruned_total: 600 },
      ]);
      expect(await ids('SELECT target FROM audit_log')).toEqual(['t600']);
    });
  });

  describe('when another process holds a table, or the flow holds a row', () => {
    it('leaves them and prunes the rest without waiting', async () => {
      await q(`INSERT INTO audit_log (at, actor, action, target)
               SELECT now() - interval '500 days', 'ops', 'discard', 't' || i FROM generate_series(1, 3) i`);
      await q(`INSERT INTO dead_letters (dlq_topic, partition, "offset", value, headers, state, resolved_at)
               SELECT 't.dlq', 0, i::text, '{}', '{}', 'discarded', now() - interval '200 days'
                 FROM generate_series(1, 3) i`);
      const holder = await database.sql.connect();
      try {
        await holder.query('BEGIN');
        // Another pruner in the middle of an audit_log chunk; the flow holding dead letter 2.
        await holder.query(
          `SELECT pg_advisory_xact_lock(hashtext(current_schema()), hashtext('rentbridge.retention.audit_log'))`,
        );
        await holder.query(`SELECT id FROM dead_letters WHERE "offset" = '2' FOR UPDATE`);
        const pass = await pruner().runPass();
        expect(pass.skipped).toEqual(['audit_log']);
        expect(pass.deleted.dead_letters).toBe(2);
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
      }
      expect(await ids(`SELECT "offset" FROM dead_letters`)).toEqual(['2']);
      expect((await q('SELECT count(*)::int AS n FROM audit_log'))[0]).toEqual({ n: 3 });
    });
  });

  describe('when started as a background component', () => {
    it('prunes on its own timer until stopped', async () => {
      await delivery('old', 'delivered', 40);
      const background = pruner({ intervalMs: 200 });
      background.start();
      try {
        await vi.waitFor(
          async () =>
            expect((await q('SELECT count(*)::int AS n FROM callback_deliveries'))[0]).toEqual({ n: 0 }),
          { timeout: 10_000, interval: 100 },
        );
      } finally {
        await background.stop();
      }
      expect(await q(`SELECT behind FROM retention_state WHERE table_name = 'callback_deliveries'`)).toEqual([
        { behind: false },
      ]);
    });
  });

  describe('when it prunes', () => {
    it("counts each table's rows on /metrics, every table's series present from the start", async () => {
      await delivery('d', 'delivered', 40);
      const before = await counter('callback_deliveries');
      pruner();
      for (const table of RETAINED_TABLES) expect(await counter(table)).toBeGreaterThanOrEqual(0);
      await pruner().runPass();
      expect((await counter('callback_deliveries')) - before).toBe(1);
    });

    it("says each table's size and when it was last pruned", async () => {
      await delivery('d', 'delivered', 40);
      await pruner().runPass();
      const tables = await tableStorage(database.db);
      const callbacks = tables.find((t) => t.table === 'callback_deliveries');
      expect(callbacks?.lastPrunedAt).toBeInstanceOf(Date);
      expect(callbacks?.prunedTotal).toBe(1);
      expect(callbacks?.tableBytes).toBeGreaterThan(0);
      expect(tables.find((t) => t.table === 'commands')?.lastPrunedAt).toBeNull();
    });
  });
});

async function counter(table: string): Promise<number> {
  const metric = await registry.getSingleMetric('rentbridge_retention_pruned_rows_total')?.get();
  const value = metric?.values.find((v) => v.labels.table === table)?.value;
  if (value === undefined) throw new Error(`no series for ${table}`);
  return value;
}
