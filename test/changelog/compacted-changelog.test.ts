import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { recordChanges, type StateChangeInput } from '../../src/changes/record-changes.js';
import { ensureTopics, topicName, TOPICS } from '../../src/kafka/topics.js';
import { defaultTopicSettings } from '../../src/kafka/topic-settings.js';
import type { Resource } from '../../src/partner/resources.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { drainOutbox } from '../support/app.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { readWholeTopic, rebuildState } from './read-topic.js';

/**
 * partner.<resource> as a changelog, end to end on the real broker: changes written through the
 * one write path, published by the relay, read back by a consumer group that starts afterwards.
 */

const RECORDS = 1000;

/** 1,000 records created, half updated, a fifth of those updated again, 150 removed. */
function scenario(resource: Resource): { changes: StateChangeInput[][]; current: Map<string, string> } {
  const id = (i: number) => `r${String(i).padStart(4, '0')}`;
  const current = new Map<string, string>();
  const change = (i: number, version: string, removed = false): StateChangeInput => ({
    resource,
    record: { id: id(i), updated_at: version, status: removed ? 'gone' : `s-${version}` },
    via: 'poll',
    source: '/test',
    ...(removed && { removed: true }),
  });
  const created = Array.from({ length: RECORDS }, (_, i) => change(i, '2026-01-01T00:00:00Z'));
  const updated = Array.from({ length: RECORDS / 2 }, (_, i) => change(i * 2, '2026-01-02T00:00:00Z'));
  const again = Array.from({ length: RECORDS / 5 }, (_, i) => change(i * 5, '2026-01-03T00:00:00Z'));
  const removed = Array.from({ length: 150 }, (_, i) => change(i * 3 + 1, '2026-01-04T00:00:00Z', true));
  for (const c of [...created, ...updated, ...again])
    current.set(String(c.record.id), String(c.record.updated_at));
  for (const c of removed) current.delete(String(c.record.id));
  return { changes: [created, updated, again, removed], current };
}

describe('partner.<resource> changelogs', () => {
  let database: TestDatabase;
  let kafka: TestKafka;

  beforeAll(async () => {
    database = await createTestDatabase();
    kafka = createTestKafka();
  });
  afterAll(async () => {
    await kafka?.close();
    await database?.drop();
  });

  async function publish(resource: Resource, changes: StateChangeInput[][]): Promise<void> {
    for (const batch of changes) {
      for (let i = 0; i < batch.length; i += 250) {
        await database.db.$transaction((tx) => recordChanges(tx, batch.slice(i, i + 250)), {
          timeout: 60_000,
          maxWait: 60_000,
        });
      }
    }
    await drainOutbox(database, kafka);
  }

  describe('when a record is removed', () => {
    it('publishes a tombstone (same key, null value, no CloudEvent headers) right after its removed event', async () => {
      const resource: Resource = 'leads';
      const admin = kafka.kafka.admin();
      await admin.connect();
      await ensureTopics(admin, { prefix: kafka.prefix, partitions: 3, topics: [TOPICS.partner(resource)] });
      await admin.disconnect();
      const { changes } = scenario(resource);
      await publish(resource, changes);

      const read = await readWholeTopic(kafka.kafka, topicName(kafka.prefix, TOPICS.partner(resource)));
      const removals = read.filter(
        (r) => r.message.value !== null && r.message.headers?.ce_type?.toString() === 'partner.lead.removed',
      );
      expect(removals).toHaveLength(150);
      for (const removal of removals) {
        const next = read.find(
          (r) =>
            r.partition === removal.partition &&
            BigInt(r.message.offset) === BigInt(removal.message.offset) + 1n,
        );
        expect(next?.message.key?.toString()).toBe(removal.message.key?.toString());
        expect(next?.message.value).toBeNull();
        expect(Object.keys(next?.message.headers ?? {})).not.toContain('ce_id');
      }
      expect(read.filter((r) => r.message.value === null)).toHaveLength(150);
    });
  });

  describe('when compaction has run', () => {
    it('a consumer group that starts afterwards reads exactly the current set, each record once', async () => {
      const resource: Resource = 'applications';
      const topic = topicName(kafka.prefix, TOPICS.partner(resource));
      const admin = kafka.kafka.admin();
      await admin.connect();
      // Compaction forced: tiny segments rolled at once, every segment cleanable, nothing kept back,
      // tombstones may go 100 ms after a later cleaning (the broker's cleaner looks every 15 s).
      await ensureTopics(admin, {
        prefix: kafka.prefix,
        topics: [TOPICS.partner(resource)],
        settings: {
          ...defaultTopicSettings(1),
          changelogMinCompactionLagMs: 0,
          overrides: {
            changelog: {
              'segment.bytes': '16384',
              'segment.ms': '100',
              'min.cleanable.dirty.ratio': '0.01',
              'delete.retention.ms': '100',
              'max.compaction.lag.ms': '1000',
            },
          },
        },
      });
      await admin.disconnect();
      const { changes, current } = scenario(resource);
      const published = changes.flat().length + 150; // every removal also has its tombstone
      await publish(resource, changes);
      // One more change after segment.ms rolls the segment the scenario ended in, so it can be cleaned.
      await new Promise((r) => setTimeout(r, 300));
      const marker = `r${RECORDS + 1}`;
      await publish(resource, [
        [{ resource, record: { id: marker, updated_at: 'z' }, via: 'poll', source: '/test' }],
      ]);
      current.set(marker, 'z');

      let read: Awaited<ReturnType<typeof readWholeTopic>> = [];
      await vi.waitFor(
        async () => {
          read = await readWholeTopic(kafka.kafka, topic);
          // Compacted: one message per key left (a live record's latest version, or a removed one's
          // tombstone until delete.retention.ms after a later cleaning), not every version.
          expect(read.length).toBeLessThanOrEqual(current.size + 150 + 20);
          // The cleaner works segment by segment: wait until it has also cleaned the segments that
          // held the removed records' older values (under load it reaches them last), not only
          // until the topic is small enough.
          const removedWithValues = read.filter(
            (r) => r.message.value !== null && !current.has(r.message.key!.toString()),
          );
          expect(removedWithValues).toEqual([]);
        },
        { timeout: 120_000, interval: 3_000 },
      );
      expect(read.length).toBeLessThan(published / 1.9);
      const state = rebuildState(read);
      expect(new Map([...state].map(([k, v]) => [k, v.updated_at]))).toEqual(current);
      // Each live record's latest version once; of a removed one, at most its tombstone.
      const values = read.filter((r) => r.message.value !== null).map((r) => r.message.key!.toString());
      expect(new Set(values).size).toBe(values.length);
      expect(values.filter((k) => !current.has(k))).toEqual([]);
    }, 180_000);
  });
});
