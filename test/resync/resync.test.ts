import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCloudEvent } from '../../src/contracts/cloudevent.js';
import { topicName, TOPICS } from '../../src/kafka/topics.js';
import { LIST_PATHS } from '../../src/partner/index.js';
import { createResync } from '../../src/resync/resync.js';
import { readWholeTopic } from '../changelog/read-topic.js';
import { createPollerHarness, silent, type PollerHarness } from '../poller/poller-harness.js';
import { drainOutbox } from '../support/app.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';

/**
 * `rentbridge resync` through its entry (createResync) against the sandbox over HTTP, with the
 * shared rate budget in PostgreSQL: what it publishes (read back from the real broker), what it
 * costs, and where it goes on.
 */

const RECORDS = 10_000;

describe('resync', () => {
  let h: PollerHarness;
  let kafka: TestKafka;

  beforeAll(async () => {
    kafka = createTestKafka();
    await kafka.createTopics([TOPICS.partner('leads')]);
    // The sandbox's own limit: the budget learns the API's X-RateLimit-Remaining against it.
    h = await createPollerHarness({ limitPerMinute: 650 });
    for (let i = 0; i < RECORDS; i += 2000) {
      await h.control.addRecords(
        'leads',
        // Created and changed well before the resync: records created during a walk make it re-read.
        Array.from({ length: 2000 }, (_, n) => ({
          name: `lead ${i + n}`,
          status: 'open',
          created_at: '2026-01-01T00:00:00Z',
          updated_at: '2026-01-02T00:00:00Z',
        })),
      );
    }
  }, 120_000);
  afterAll(async () => {
    await kafka?.close();
    await h?.close();
  });

  async function resyncRows() {
    return h.database.db.outboxMessage.findMany({
      where: { topic: 'partner.leads', source: '/resync/leads' },
      select: { key: true, type: true, data: true },
      orderBy: { id: 'asc' },
    });
  }

  describe('when 10,000 records are resynced', () => {
    it('publishes each record once, as a resync, in one poll-lane request per 1,000 records', async () => {
      const before = h.listQueries(LIST_PATHS.leads).length;
      const [result] = await createResync({ partner: h.partner, db: h.database.db, logger: silent }).run({
        resource: 'leads',
      });
      const rows = await resyncRows();
      expect(rows).toHaveLength(RECORDS);
      expect(new Set(rows.map((r) => r.key)).size).toBe(RECORDS);
      for (const row of rows) {
        expect(row.type).toBe('partner.lead.updated');
        expect(row.data).toMatchObject({ via: 'resync', removed: false, previous_status: null });
      }
      // The minimum: 1,000 records a page.
      expect(h.listQueries(LIST_PATHS.leads).length - before).toBe(RECORDS / 1000);
      expect(result).toMatchObject({ records: RECORDS, pagesDone: 10, resumed: false });
      // Every request took its slot on the poll lane of the shared budget.
      const slots = await h.database.db.$queryRaw<{ lane: string; n: bigint }[]>`
        SELECT lane, count(*) AS n FROM rate_budget_slots GROUP BY lane`;
      // (the token's issue, a POST, takes one on the write lane).
      expect(Object.fromEntries(slots.map((s) => [s.lane, Number(s.n)]))).toEqual({
        poll: RECORDS / 1000,
        write: 1,
      });

      // On the broker, as a consumer reads it: each record once, a CloudEvent marked as a resync.
      await drainOutbox(h.database, kafka);
      const read = await readWholeTopic(kafka.kafka, topicName(kafka.prefix, TOPICS.partner('leads')));
      expect(read).toHaveLength(RECORDS);
      const events = read.map((r) => ({
        key: r.message.key!.toString(),
        event: parseCloudEvent(r.message.value),
      }));
      expect(new Set(events.map((e) => e.key)).size).toBe(RECORDS);
      for (const { key, event } of events) {
        expect(event).toMatchObject({ type: 'partner.lead.updated', source: '/resync/leads', subject: key });
        expect(event.data).toMatchObject({ id: key, via: 'resync', removed: false });
      }
    }, 180_000);
  });

  describe('when a resync is stopped and run again', () => {
    it('goes on from the last page written: every record published, at most one page twice', async () => {
      await h.database.db.outboxMessage.deleteMany({});
      const progress: number[] = [];
      let pages = 0;
      const stopping = createResync({
        partner: h.partner,
        db: h.database.db,
        logger: silent,
        onProgress: (p) => progress.push(p.pagesDone),
        isStopping: () => ++pages >= 4,
      });
      await expect(stopping.run({ resource: 'leads', restart: true })).rejects.toThrow(/stopping/);
      expect((await resyncRows()).length).toBe(4000);
      const before = h.listQueries(LIST_PATHS.leads).length;
      const [result] = await createResync({ partner: h.partner, db: h.database.db, logger: silent }).run({
        resource: 'leads',
      });
      expect(result).toMatchObject({ resumed: true, pagesDone: 10 });
      // Pages 4..10: the last page written is read again (a delete may have shifted a record onto it).
      expect(h.listQueries(LIST_PATHS.leads).length - before).toBe(7);
      const rows = await resyncRows();
      expect(new Set(rows.map((r) => r.key)).size).toBe(RECORDS);
      expect(rows.length).toBe(RECORDS + 1000);
      expect(progress).toEqual([1, 2, 3, 4]);
    }, 120_000);
  });

  describe('when a record was seen removed', () => {
    it('ends the pass with its tombstone', async () => {
      await h.database.db.knownRecord.create({
        data: { resource: 'leads', recordId: 'gone-1', updatedAt: 'removed:x', removedAt: new Date() },
      });
      const [result] = await createResync({ partner: h.partner, db: h.database.db, logger: silent }).run({
        resource: 'leads',
        restart: true,
      });
      expect(result?.tombstones).toBe(1);
      const tombstones = await h.database.db.outboxMessage.findMany({
        where: { topic: 'partner.leads', type: 'rentbridge.tombstone' },
      });
      expect(tombstones.map((t) => t.key)).toEqual(['gone-1']);
    }, 120_000);
  });
});
