import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptsOf, listDeliveries, queueBySource } from '../../src/callbacks/callback-repository.js';
import type { Db } from '../../src/db/prisma.js';
import { listAudit } from '../../src/dead-letters/audit-repository.js';
import { countDeadLetters, searchDeadLetters } from '../../src/dead-letters/dead-letter-repository.js';
import { createCommandRepository } from '../../src/guard/store/command-repository.js';
import { createPaymentLedger } from '../../src/command-types/rental-payments/payment-ledger.js';
import { createSnapshotStore } from '../../src/guard/read-backs/snapshot-store.js';
import { readOverviewRows } from '../../src/ops/overview/overview-repository.js';
import { createCommandStatusRepository } from '../../src/pms/command-status-repository.js';
import { traceId } from '../../src/event-trace/trace.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import {
  fillHistory,
  firstValue,
  GROWING_TABLES,
  capturingDb,
  type Statement,
} from '../support/history-fill.js';

/**
 * Every lookup the trace, the PMS status API, the console and ops API, the CLI, the callbacks and
 * the guard make on a table that grows is an index lookup or a bounded range (issue 42). Each is
 * run through its own code against tables filled with enough history that PostgreSQL would read a
 * whole table where no index serves (statistics fresh: ANALYZE after the fill); the statements it
 * sends are captured and explained, and a sequential scan of a growing table fails the test.
 */
const GROWING = new Set(GROWING_TABLES);

describe('the lookups on growing tables', () => {
  let database: TestDatabase;
  let db: Db;
  let captured: Statement[] = [];
  const ids = { eventId: '', deadLetterId: '', deliveryId: '' };

  beforeAll(async () => {
    database = await createTestDatabase();
    await fillHistory(database.sql, {
      commands: 20_000,
      versions: 30_000,
      // A large PMS's year of letters: more than a count reads (DEAD_LETTER_COUNT_CAP).
      deadLetters: 20_000,
      audit: 4000,
      outbox: 4000,
    });
    await database.sql.query('ANALYZE');
    ({ db, statements: captured } = capturingDb(database.url));
    const one = (text: string) => firstValue(database.sql, text);
    ids.eventId = await one(`SELECT event_id FROM outbox WHERE key = 'h_rec_100'`);
    ids.deadLetterId = await one(`SELECT id FROM dead_letters WHERE "offset" = 'h100'`);
    ids.deliveryId = await one(`SELECT id FROM callback_deliveries WHERE command_id = 'h-pay-5001'`);
  }, 120_000);
  afterAll(async () => {
    await db.$disconnect();
    await database.drop();
  });

  /** The growing tables each statement `run` sends reads by sequential scan, with the statement. */
  async function seqScans(run: (db: Db) => Promise<unknown>): Promise<string[]> {
    captured.length = 0;
    await run(db);
    const reads = captured.filter((c) => /^\s*(SELECT|WITH)\b/i.test(c.query));
    expect(reads.length).toBeGreaterThan(0);
    const found: string[] = [];
    for (const c of reads) {
      const { rows } = await database.sql.query<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (FORMAT JSON) ${c.query}`,
        c.params,
      );
      for (const table of scannedTables(rows[0]?.['QUERY PLAN']))
        found.push(`${table}: ${c.query.replace(/\s+/g, ' ').slice(0, 160)}`);
    }
    return found;
  }

  const status = (db: Db) => createCommandStatusRepository(db);
  const guard = (db: Db) => createCommandRepository(db);
  const identity = { source: 'acme', commandType: 'rental_payment', commandId: 'h-pay-5002' } as const;
  const trace = (id: string) => (db: Db) => traceId(db, id, { topicPrefix: '', retentionHours: 72 });

  const LOOKUPS: Array<[string, (db: Db) => Promise<unknown>]> = [
    ['the trace by a command id', trace('h-pay-5001')],
    ['the trace by a Partner request id', trace('h-pay-5001.a1')],
    ['the trace by a webhook id', trace('h-ob-100')],
    ['the trace by a CloudEvent id', (db) => trace(ids.eventId)(db)],
    ['the trace by a record id', trace('h_rec_100')],
    ['the trace by a dead letter id', (db) => trace(ids.deadLetterId)(db)],
    ['the trace by a dead letter webhook id', trace('h-wh-100')],
    ['the trace by a target record id', trace('enr_5001')],
    ['the PMS status of one command', (db) => status(db).byId('acme', 'h-pay-5001')],
    [
      'the PMS command list of the last hour',
      (db) => status(db).list('acme', { since: new Date(Date.now() - 3_600_000), limit: 100 }),
    ],
    ['the callbacks status per source', (db) => queueBySource(db)],
    ['the dead callbacks list', (db) => listDeliveries(db, { state: 'dead' })],
    [
      "a command's callbacks and their attempts",
      async (db) => {
        await listDeliveries(db, { source: 'birch', commandId: 'h-pay-5001', commandType: 'rental_payment' });
        await attemptsOf(db, ids.deliveryId);
      },
    ],
    [
      'the open dead letters list and its counts',
      async (db) => {
        await searchDeadLetters(db, { state: 'open', limit: 100 });
        await countDeadLetters(db, { state: 'open' });
      },
    ],
    [
      'every dead letter and its counts (state=all)',
      async (db) => {
        await searchDeadLetters(db, { state: 'all', limit: 100 });
        await countDeadLetters(db, { state: 'all' });
      },
    ],
    [
      'the free-text search of dead letters and its counts',
      async (db) => {
        await searchDeadLetters(db, { search: 'enr_4242', state: 'all', limit: 100 });
        await countDeadLetters(db, { search: 'enr_4242', state: 'all' });
        await searchDeadLetters(db, { search: 'not accepted', state: 'open', limit: 100 });
      },
    ],
    [
      'the dead letters of a Partner request id',
      (db) => searchDeadLetters(db, { requestId: 'h-dl-100.a1', state: 'all' }),
    ],
    [
      'the dead letters of a command id',
      (db) => searchDeadLetters(db, { commandId: 'h-dl-100', state: 'all' }),
    ],
    [
      'the audit list and one target',
      async (db) => {
        await listAudit(db, { limit: 100 });
        await listAudit(db, { target: 'dead-letter:h100' });
      },
    ],
    [
      "the guard's stored read of a record",
      (db) =>
        createSnapshotStore({ db, keyId: 'deployment', maxAgeMs: 600_000 }).find('enrollments', 'h_rec_101'),
    ],
    ['the overview refresh', (db) => readOverviewRows(db, { stuckAfterSeconds: 300 })],
    [
      "the guard's reads of a command",
      async (db) => {
        await guard(db).find(identity);
        await guard(db).requestIdBaseFor(identity);
        await guard(db).attempts(identity);
      },
    ],
    [
      "the guard's count of payments with the same facts on an enrollment (decision 047)",
      (db) =>
        createPaymentLedger(db).othersWithFacts({
          payment_id: 'h-pay-5002',
          enrollment_id: 'enr_5001',
          amount_cents: 100_000,
          paid_on: '2026-01-01',
          period: '2026-01',
        } as never),
    ],
  ];

  it.each(LOOKUPS)('%s reads no growing table whole', async (_name, run) => {
    expect(await seqScans(run)).toEqual([]);
  });

  it('finds a lookup that no index serves (the check can fail)', async () => {
    const found = await seqScans(
      (db) => db.$queryRaw`SELECT * FROM commands WHERE payload->>'paid_on' = '2026-01-01'`,
    );
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^commands: /);
  });
});

/** Every growing table a plan reads by Seq Scan (JSON plan: nodes nest under `Plans`). */
function scannedTables(plan: unknown): string[] {
  const out: string[] = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    const n = node as { 'Node Type'?: string; 'Relation Name'?: string; Plan?: unknown; Plans?: unknown[] };
    if (n['Node Type'] === 'Seq Scan' && n['Relation Name'] && GROWING.has(n['Relation Name']))
      out.push(n['Relation Name']);
    walk(n.Plan);
    n.Plans?.forEach(walk);
  };
  walk(plan);
  return out;
}
