import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR, migrate, readMigrations } from '../../src/db/migrate.js';
import { findGuardState } from '../../src/dead-letters/redrive-guard.js';
import { createCommandRepository } from '../../src/guard/store/command-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * Issue 35, point 4: a deployment upgraded in place keeps every guard row and keeps deduping the
 * commands it knows. The database is migrated up to the migration before identities, filled as
 * the old code would have left it, then `rentbridge migrate`'s runner applies the rest.
 */
const IDENTITY_MIGRATION = '20261125350000_command_identity';

describe('migration to command identities', () => {
  let database: TestDatabase;
  let before: string;

  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
    before = await mkdtemp(join(tmpdir(), 'migrations-before-identity-'));
    for (const m of await readMigrations()) {
      if (m.name >= IDENTITY_MIGRATION) break;
      await cp(join(MIGRATIONS_DIR, m.name), join(before, m.name), { recursive: true });
    }
    await migrate(database.url, { dir: before });
    const sql = database.sql;
    // What the old code wrote: rows keyed by command id alone, request ids from it.
    await sql.query(`
      INSERT INTO commands (command_id, command_type, target_id, state, payload, attempts, request_ids, finished_at)
      VALUES ('pay-1', 'rental_payment', 'enr-1', 'applied',
              '{"payment_id":"pay-1","enrollment_id":"enr-1","amount_cents":100,"paid_on":"2026-11-01"}', 1, '{pay-1.a1}', now()),
             ('dec-9', 'application_decision', 'app-9', 'rejected',
              '{"decision_id":"dec-9","application_id":"app-9","decision":"approve"}', 1, '{dec-9.a1}', now()),
             ('${'x'.repeat(120)}', 'rental_payment', 'enr-2', 'pending',
              '{"payment_id":"${'x'.repeat(120)}","enrollment_id":"enr-2","amount_cents":5,"paid_on":"2026-11-01"}', 0, '{}', NULL)`);
    await sql.query(`
      INSERT INTO command_attempts (command_id, attempt, request_id, kind, result, status)
      VALUES ('pay-1', 1, 'pay-1.a1', 'write', 'applied', 201), ('dec-9', 1, 'dec-9.a1', 'write', 'rejected', 422)`);
    // The webhook that brought pay-1 is still in the outbox: its source is known.
    await sql.query(`
      INSERT INTO outbox (event_id, topic, key, type, source, subject, data, headers)
      VALUES (gen_random_uuid(), 'commands.rental-payments', 'enr-1', 'rentbridge.command.rental-payment',
              '/webhooks/pms/acme', 'pay-1', '{"payment_id":"pay-1","enrollment_id":"enr-1"}', '{}')`);
    await sql.query(`
      INSERT INTO dead_letters (dlq_topic, partition, "offset", value, headers, original_topic, reason, command_id, partner_request_ids)
      VALUES ('p.commands.application-decisions.dlq', 0, '7',
              '{"specversion":"1.0","id":"e","source":"/webhooks/pms/beta","type":"t","data":{"decision_id":"dec-9"}}',
              '{}', 'p.commands.application-decisions', 'rejected', 'dec-9', '{dec-9.a1}'),
             ('p.commands.application-decisions.dlq', 0, '8', 'not json', '{}', 'p.commands.application-decisions',
              'invalid_message', 'dec-x', '{}')`);
    await migrate(database.url);
  });
  afterAll(async () => {
    await database?.drop();
    if (before) await rm(before, { recursive: true, force: true });
  });

  it('keeps every row, with its source from the outbox, else the documented default', async () => {
    const { rows } = await database.sql.query<{
      source: string;
      command_id: string;
      state: string;
      request_id_base: string;
      request_ids: string[];
    }>('SELECT source, command_id, state, request_id_base, request_ids FROM commands ORDER BY command_id');
    expect(rows.map((r) => [r.command_id.slice(0, 6), r.source, r.state])).toEqual([
      ['dec-9', '', 'rejected'],
      ['pay-1', 'acme', 'applied'],
      ['xxxxxx', '', 'pending'],
    ]);
    // The base the old request ids used: unchanged for ids that fit, the old encoding otherwise.
    expect(rows[1]).toMatchObject({ request_id_base: 'pay-1', request_ids: ['pay-1.a1'] });
    expect(rows[2]!.request_id_base).toMatch(/^x{79}-[0-9a-f]{16}$/);
    const attempts = await database.sql.query(
      'SELECT source, command_type, command_id FROM command_attempts',
    );
    expect(attempts.rows).toHaveLength(2);
    expect(attempts.rows).toContainEqual({
      source: 'acme',
      command_type: 'rental_payment',
      command_id: 'pay-1',
    });
  });

  it('gives dead letters the identity their value names', async () => {
    const { rows } = await database.sql.query<{
      offset: string;
      command_source: string | null;
      command_type: string | null;
    }>('SELECT "offset", command_source, command_type FROM dead_letters ORDER BY "offset"');
    expect(rows).toEqual([
      { offset: '7', command_source: 'beta', command_type: 'application_decision' },
      { offset: '8', command_source: null, command_type: 'application_decision' },
    ]);
  });

  it('keeps deduping: the known command is found again, a row of unknown source is adopted by the same command', async () => {
    const repo = createCommandRepository(database.db);
    const paid = await repo.ensure({
      source: 'acme',
      commandType: 'rental_payment',
      commandId: 'pay-1',
      targetId: 'enr-1',
      payload: { payment_id: 'pay-1', enrollment_id: 'enr-1', amount_cents: 100, paid_on: '2026-11-01' },
    });
    expect(paid).toMatchObject({ state: 'applied', requestIds: ['pay-1.a1'] });

    // dec-9's source was lost with its outbox row: the same decision, from whichever source
    // sends it again, is that row (not a new command written again).
    const decision = { decision_id: 'dec-9', application_id: 'app-9', decision: 'approve' };
    const adopted = await repo.ensure({
      source: 'beta',
      commandType: 'application_decision',
      commandId: 'dec-9',
      targetId: 'app-9',
      payload: decision,
    });
    expect(adopted).toMatchObject({ source: 'beta', state: 'rejected', requestIdBase: 'dec-9' });
    expect(
      await repo.attempts({ source: 'beta', commandType: 'application_decision', commandId: 'dec-9' }),
    ).toHaveLength(1);
    // Another source's decision with other content under that id is another command.
    const other = await repo.ensure({
      source: 'gamma',
      commandType: 'application_decision',
      commandId: 'dec-9',
      targetId: 'app-10',
      payload: { ...decision, application_id: 'app-10' },
    });
    expect(other).toMatchObject({ source: 'gamma', state: 'pending', targetId: 'app-10' });
    expect(other.requestIdBase).not.toBe('dec-9');
    expect(other.requestIdBase).toMatch(/^dec-9-[0-9a-f]{16}$/);
  });

  it("takes a row of unknown source for a dead letter's command only when it holds the same command", async () => {
    // An applied decision from before identities whose source was lost with its outbox row.
    const decision = { decision_id: 'dec-7', application_id: 'app-7', decision: 'approve' };
    await database.sql.query(
      `INSERT INTO commands (source, command_id, command_type, target_id, state, payload, request_id_base, request_ids)
       VALUES ('', 'dec-7', 'application_decision', 'app-7', 'applied', $1, 'dec-7', '{dec-7.a1}')`,
      [JSON.stringify(decision)],
    );
    const identity = { source: 'acme', commandType: 'application_decision' as const, commandId: 'dec-7' };
    // acme's letter holding that decision: the same command, so a redrive closes it as applied.
    expect(await findGuardState(database.db, identity, { ...decision })).toMatchObject({
      identity: { source: '' },
      guard: { state: 'applied', targetId: 'app-7' },
    });
    // A letter of another decision under that id (another source's, another application): not
    // that row, so it is never closed as "already applied" on the strength of another command.
    expect(await findGuardState(database.db, identity, { ...decision, application_id: 'app-8' })).toBeNull();
    expect(await findGuardState(database.db, identity, null)).toBeNull();
  });
});
