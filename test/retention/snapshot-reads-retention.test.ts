import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { createSnapshotStore, type SnapshotStore } from '../../src/guard/read-backs/snapshot-store.js';
import { createLogger } from '../../src/logger.js';
import { createRetentionPruner } from '../../src/retention/retention-pruner.js';
import { retentionRules } from '../../src/retention/retention-rules.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * snapshot_reads (issue 43's table, one row per record and key) within its retention (issue 42):
 * a stored read neither read again nor written for SNAPSHOT_READ_RETENTION_DAYS goes; one the
 * poller or the guard touched since stays. Rows are written by the guard's own snapshot store;
 * their age is moved in SQL (or the pruner's clock forward), as if the days had passed.
 */
const DAY = 86_400_000;
const logger = createLogger({ level: 'silent' });

describe('the retention of stored snapshot reads', () => {
  let database: TestDatabase;
  let store: SnapshotStore;
  beforeAll(async () => {
    database = await createTestDatabase();
    store = createSnapshotStore({ db: database.db, keyId: 'deployment', maxAgeMs: 600_000 });
  });
  afterAll(() => database.drop());
  beforeEach(async () => {
    await database.sql.query('TRUNCATE snapshot_reads, retention_state');
  });

  const pruner = (env: Record<string, string> = {}, now?: () => number) =>
    createRetentionPruner({
      db: database.db,
      logger,
      rules: retentionRules(loadConfig(env)),
      ...(now ? { now } : {}),
    });
  const records = async () =>
    (
      await database.sql.query<{ record_id: string }>(
        'SELECT record_id FROM snapshot_reads ORDER BY record_id',
      )
    ).rows.map((r) => r.record_id);
  const page = (...ids: string[]) => ids.map((id) => ({ id, status: 'active' }));
  /** Every stored read and write of these records, `days` older. */
  const age = async (days: number, ids: string[]) =>
    database.sql.query(
      `UPDATE snapshot_reads SET asked_at = asked_at - $1 * interval '1 day',
                                 wrote_at = wrote_at - $1 * interval '1 day'
        WHERE record_id = ANY($2::text[])`,
      [days, ids],
    );

  it('prunes a read untouched past the default 7 days and keeps one read again or written since', async () => {
    await store.savePage('enrollments', page('enr_1', 'enr_2', 'enr_3'), Date.now(), { page: 1, perPage: 3 });
    await store.wrote('enrollments', 'enr_4');
    await age(8, ['enr_1', 'enr_2', 'enr_3', 'enr_4']);
    // Since then: the guard wrote to enr_2, the poller's pass listed enr_3 again.
    await store.wrote('enrollments', 'enr_2');
    await store.savePage('enrollments', page('enr_3'), Date.now(), { page: 1, perPage: 1 });

    const pass = await pruner().runPass();

    expect(await records()).toEqual(['enr_2', 'enr_3']);
    expect(pass.deleted.snapshot_reads).toBe(2);
    // A pruned record is simply unknown: the guard pages for it, as for a record never read.
    expect(await store.find('enrollments', 'enr_1')).toBeNull();
    expect((await store.find('enrollments', 'enr_3'))?.usable).toBe(true);
    const [state] = (
      await database.sql.query<{ pruned_total: string }>(
        `SELECT pruned_total FROM retention_state WHERE table_name = 'snapshot_reads'`,
      )
    ).rows;
    expect(Number(state?.pruned_total)).toBe(2);
  });

  it('keeps reads younger than the setting, and prunes them once the clock passes it', async () => {
    await store.savePage('applications', page('app_1', 'app_2'), Date.now());
    await age(8, ['app_1']);

    await pruner({ SNAPSHOT_READ_RETENTION_DAYS: '30' }).runPass();
    expect(await records()).toEqual(['app_1', 'app_2']);

    await pruner({ SNAPSHOT_READ_RETENTION_DAYS: '30' }, () => Date.now() + 25 * DAY).runPass();
    expect(await records()).toEqual(['app_2']);

    await pruner({}, () => Date.now() + 8 * DAY).runPass();
    expect(await records()).toEqual([]);
  });
});
