import { describe, expect, it } from 'vitest';
import { appendAudit, entryHash, GENESIS_HASH } from '../../src/audit/audit-chain.js';
import { verifyAuditChain } from '../../src/audit/audit-verify.js';
import { useTestDatabase } from '../support/db.js';

/**
 * Issue 51: the audit chain covers a digest of each entry's details (hash version 2), so an erasure
 * empties the details and `audit verify` still holds; entries chained by older versions (version 1)
 * still verify as written, and one of them erased is held by its place in the chain.
 */
describe('erasable audit details', () => {
  const database = useTestDatabase();
  const erase = (id: string) =>
    database.sql.query(
      `UPDATE audit_log SET details = '{"erased":true}', details_erased_at = now() WHERE id = $1`,
      [id],
    );

  it('verifies version-1 entries as written, and after one of them and a version-2 entry are erased', async () => {
    // Two entries as the chain before issue 51 wrote them: the hash covers the details whole.
    let prev = GENESIS_HASH;
    for (const id of [1, 2]) {
      const at = new Date(Date.UTC(2026, 10, 1, 0, id));
      const entry = { id, at, actor: 'ops:a', action: 'redrive', target: `dead_letter:${id}`, reason: null };
      const details = { corrected: { email: `person${id}@example.com` } };
      const hash = entryHash(prev, { ...entry, details });
      await database.sql.query(
        `INSERT INTO audit_log (id, at, actor, action, target, details, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [id, at, entry.actor, entry.action, entry.target, JSON.stringify(details), prev, hash],
      );
      await database.sql.query(`UPDATE audit_chain SET head_id = $1, head_hash = $2`, [id, hash]);
      prev = hash;
    }
    await database.sql.query(`SELECT setval(pg_get_serial_sequence('audit_log', 'id'), 2)`);
    await appendAudit(database.db, {
      actor: 'ops:b',
      action: 'redrive',
      target: 'dead_letter:3',
      details: { x: 'y' },
    });
    expect(await verifyAuditChain(database.db)).toMatchObject({ ok: true, checked: 3, erased: 0 });

    await erase('1');
    await erase('3');
    expect(await verifyAuditChain(database.db)).toMatchObject({
      ok: true,
      checked: 3,
      erased: 2,
      erasedLegacy: 1,
    });
  });

  it('still names a version-2 entry whose details were changed without an erasure, or whose digest was', async () => {
    await appendAudit(database.db, {
      actor: 'ops:c',
      action: 'redrive',
      target: 'dead_letter:4',
      details: { x: 1 },
    });
    const { rows } = await database.sql.query<{ id: string }>(`SELECT max(id)::text AS id FROM audit_log`);
    const id = rows[0]!.id;
    await database.sql.query(`UPDATE audit_log SET details = '{"x":2}' WHERE id = $1`, [id]);
    expect((await verifyAuditChain(database.db)).firstBreak?.id).toBe(id);
    await database.sql.query(
      `UPDATE audit_log SET details = '{"x":1}', details_digest = repeat('0', 64), details_erased_at = now() WHERE id = $1`,
      [id],
    );
    expect((await verifyAuditChain(database.db)).firstBreak?.id).toBe(id);
  });
});
