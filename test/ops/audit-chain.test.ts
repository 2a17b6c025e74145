import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { appendAudit } from '../../src/audit/audit-chain.js';
import { verifyAuditChain } from '../../src/audit/audit-verify.js';
import { runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/** #44 item 5: the audit trail is a hash chain that `rentbridge audit verify` walks. */
describe('the audit hash chain', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  /** A fresh trail of `n` entries (the chain row reset as the migration leaves it). */
  async function trail(n: number): Promise<string[]> {
    await database.sql.query('ALTER TABLE audit_log DISABLE TRIGGER audit_log_pruned');
    await database.sql.query('DELETE FROM audit_log');
    await database.sql.query('ALTER TABLE audit_log ENABLE TRIGGER audit_log_pruned');
    await database.sql.query(
      `UPDATE audit_chain SET legacy_through_id = 0, head_id = NULL, head_hash = NULL,
              pruned_through_id = NULL, pruned_through_hash = NULL, pruned_through_at = NULL`,
    );
    for (let i = 0; i < n; i++) {
      await appendAudit(database.db, {
        actor: `person ${i}`,
        action: 'redrive',
        target: `dead_letter:${i}`,
        reason: i % 2 ? 'why' : null,
        details: { i, nested: { b: 1, a: [1, 'x'] } },
      });
    }
    const { rows } = await database.sql.query<{ id: string }>('SELECT id::text FROM audit_log ORDER BY id');
    return rows.map((r) => r.id);
  }

  const verify = () => verifyAuditChain(database.db);

  beforeEach(async () => {
    await trail(0);
  });

  it('holds on an untouched trail', async () => {
    await trail(6);
    expect(await verify()).toMatchObject({ ok: true, checked: 6, firstBreak: null });
  });

  it('names an edited entry', async () => {
    const ids = await trail(6);
    await database.sql.query(`UPDATE audit_log SET actor = 'someone else' WHERE id = $1`, [ids[3]]);
    const report = await verify();
    expect(report.ok).toBe(false);
    expect(report.firstBreak).toEqual({
      id: ids[3],
      problem: expect.stringMatching(/changed after it was written/),
    });
  });

  it('names the entry after a deleted one', async () => {
    const ids = await trail(6);
    await database.sql.query('DELETE FROM audit_log WHERE id = $1', [ids[2]]);
    const report = await verify();
    expect(report.ok).toBe(false);
    // The entries before the deleted one remain: not an oldest-first prune.
    expect(report.firstBreak?.id).toBe(ids[0]);
    expect(report.firstBreak?.problem).toMatch(/not an oldest-first prune/);
  });

  it('names a deletion the delete trigger did not see (triggers off)', async () => {
    const ids = await trail(6);
    await database.sql.query('ALTER TABLE audit_log DISABLE TRIGGER audit_log_pruned');
    await database.sql.query('DELETE FROM audit_log WHERE id = $1', [ids[2]]);
    await database.sql.query('ALTER TABLE audit_log ENABLE TRIGGER audit_log_pruned');
    expect((await verify()).firstBreak).toEqual({
      id: ids[3],
      problem: expect.stringMatching(/does not follow entry #/),
    });
  });

  it('names reordered entries', async () => {
    const ids = await trail(6);
    // Two entries swap places: their ids exchanged.
    await database.sql.query(`UPDATE audit_log SET id = -1 WHERE id = $1`, [ids[1]]);
    await database.sql.query(`UPDATE audit_log SET id = $1 WHERE id = $2`, [ids[1], ids[4]]);
    await database.sql.query(`UPDATE audit_log SET id = $1 WHERE id = -1`, [ids[4]]);
    const report = await verify();
    expect(report.ok).toBe(false);
    expect(report.firstBreak?.id).toBe(ids[1]);
  });

  it('names an entry inserted out of order and one written outside rentbridge', async () => {
    const ids = await trail(4);
    const { rows } = await database.sql.query<{ prev_hash: string; hash: string }>(
      'SELECT prev_hash, hash FROM audit_log WHERE id = $1',
      [ids[1]],
    );
    // A copy of entry 1's hashes under a new id at the end: its place in the chain is wrong.
    await database.sql.query(
      `INSERT INTO audit_log (actor, action, target, prev_hash, hash) VALUES ('x', 'redrive', 't', $1, $2)`,
      [rows[0]!.prev_hash, rows[0]!.hash],
    );
    expect((await verify()).firstBreak?.problem).toMatch(/does not follow entry #/);
    await trail(2);
    await database.sql.query(`INSERT INTO audit_log (actor, action, target) VALUES ('x', 'discard', 't')`);
    expect((await verify()).firstBreak?.problem).toMatch(/carries no hash/);
  });

  it('names the newest entries deleted', async () => {
    const ids = await trail(5);
    await database.sql.query('TRUNCATE audit_log');
    expect((await verify()).firstBreak).toEqual({
      id: 'head',
      problem: expect.stringMatching(/newest entries/),
    });
    await trail(5);
    await database.sql.query('ALTER TABLE audit_log DISABLE TRIGGER audit_log_pruned');
    await database.sql.query('DELETE FROM audit_log WHERE id >= (SELECT max(id) - 1 FROM audit_log)');
    await database.sql.query('ALTER TABLE audit_log ENABLE TRIGGER audit_log_pruned');
    expect((await verify()).firstBreak?.id).toBe('head');
    expect(ids).toHaveLength(5);
  });

  it('holds after retention prunes the oldest entries, and new entries chain on', async () => {
    const ids = await trail(6);
    await database.sql.query('DELETE FROM audit_log WHERE id <= $1', [ids[2]]);
    expect(await verify()).toMatchObject({ ok: true, checked: 3, prunedThrough: { id: ids[2] } });
    await database.sql.query('DELETE FROM audit_log');
    expect(await verify()).toMatchObject({ ok: true, checked: 0 });
    await appendAudit(database.db, { actor: 'a', action: 'discard', target: 't' });
    expect(await verify()).toMatchObject({ ok: true, checked: 1 });
  });

  it('does not fork when many writers append at once', async () => {
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        appendAudit(database.db, { actor: `w${i}`, action: 'redrive', target: 't' }),
      ),
    );
    expect(await verify()).toMatchObject({ ok: true, checked: 20 });
  });

  it('rentbridge audit verify exits 0 on a sound chain and 1 naming the first bad entry', async () => {
    const ids = await trail(3);
    const env = { DATABASE_URL: database.url, LOG_LEVEL: 'silent' };
    const good = await runCli(['audit', 'verify'], env);
    expect(good.code).toBe(0);
    expect(good.stdout).toMatch(/3 chained entries checked/);
    expect(good.stdout).toMatch(/the audit chain holds/);
    await database.sql.query(`UPDATE audit_log SET reason = 'rewritten' WHERE id = $1`, [ids[1]]);
    const bad = await runCli(['audit', 'verify'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`entry #${ids[1]} was changed after it was written`);
  });
});
