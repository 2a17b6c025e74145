import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createDeadLetterIndexer,
  type DeadLetterIndexer,
} from '../../src/dead-letters/dead-letter-indexer.js';
import { createLogger } from '../../src/logger.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { buildDecisionLetter, produceDeadLetter } from './build-dead-letter.js';

const logger = createLogger({ level: 'silent' });

function waitFor<T>(read: () => Promise<T | null | undefined>, timeoutMs = 30_000): Promise<T> {
  return vi.waitFor(
    async () => {
      const v = await read();
      if (!v) throw new Error('timed out waiting');
      return v;
    },
    { timeout: timeoutMs, interval: 200 },
  );
}

describe('dead-letter indexer', () => {
  let database: TestDatabase;
  let kafka: TestKafka;
  let indexer: DeadLetterIndexer | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
    kafka = createTestKafka();
    await kafka.createTopics();
  });
  afterAll(async () => {
    await indexer?.stop();
    await kafka.close();
    await database.drop();
  });

  describe('when a dead letter arrives on a .dlq topic', () => {
    it('stores the value byte for byte, every header and the parsed fields, once', async () => {
      const dlqTopic = `${kafka.prefix}${TOPICS.dlq(TOPICS.applicationDecisions)}`;
      const letter = buildDecisionLetter(kafka.prefix, { errorCode: 'lock_failed', errorStatus: 409 });
      const withExtra = { ...letter, headers: { ...letter.headers, 'x-custom-trace': 'trace-123' } };
      await produceDeadLetter(kafka.kafka, dlqTopic, withExtra);

      indexer = createDeadLetterIndexer({
        db: database.db,
        kafka: kafka.kafka,
        logger,
        topicPrefix: kafka.prefix,
      });
      await indexer.start();
      const row = await waitFor(() => database.db.deadLetter.findFirst({ where: { dlqTopic } }));

      expect(row.value).toBe(letter.value);
      expect(row.key).toBe(letter.key);
      expect(row.headers).toEqual(withExtra.headers);
      expect(row).toMatchObject({
        originalTopic: `${kafka.prefix}${TOPICS.applicationDecisions}`,
        originalPartition: 0,
        originalOffset: '42',
        reason: 'unverified',
        errorCode: 'lock_failed',
        errorStatus: 409,
        errorMessage: letter.info.errorMessage,
        commandId: letter.decisionId,
        partnerRequestIds: letter.info.partnerRequestIds,
        attempts: 3,
        consumerGroup: letter.info.consumerGroup,
        state: 'open',
      });
      expect(row.firstFailureAt?.toISOString()).toBe('2026-11-20T10:00:00.000Z');
      expect(row.lastFailureAt?.toISOString()).toBe('2026-11-20T10:05:00.000Z');

      // The offset is committed once the row is written.
      const admin = kafka.kafka.admin();
      await admin.connect();
      try {
        const committed = await waitFor(async () => {
          const [topicOffsets] = await admin.fetchOffsets({
            groupId: `${kafka.prefix}rentbridge.dead-letter-indexer`,
            topics: [dlqTopic],
          });
          const p = topicOffsets?.partitions.find((x) => x.partition === row.partition);
          return p && p.offset !== '-1' ? p.offset : null;
        });
        expect(committed).toBe(String(Number(row.offset) + 1));
      } finally {
        await admin.disconnect();
      }

      // Reading the topic again from the start (a new group) stores nothing twice.
      await indexer.stop();
      indexer = createDeadLetterIndexer({
        db: database.db,
        kafka: kafka.kafka,
        logger,
        topicPrefix: kafka.prefix,
        groupId: `${kafka.prefix}reread`,
      });
      const second = buildDecisionLetter(kafka.prefix, { reason: 'rejected' });
      await produceDeadLetter(kafka.kafka, `${kafka.prefix}${TOPICS.dlq(TOPICS.rentalPayments)}`, second);
      await indexer.start();
      await waitFor(() => database.db.deadLetter.findFirst({ where: { commandId: second.decisionId } }));
      // The second letter is on another topic: wait until the new group has read the first again too.
      await kafka.committedPast(`${kafka.prefix}reread`, {
        topic: TOPICS.dlq(TOPICS.applicationDecisions),
        partition: row.partition,
        offset: String(row.offset),
      });
      expect(await database.db.deadLetter.count()).toBe(2);
    });
  });

  describe('when it starts while its group waits for another member (as after a crash)', () => {
    // After the letters test: this group's letter would count among the ones it reads again.
    it('is ready before it is in its group, catches up after; stopped, it is not ready', async () => {
      const groupId = `${kafka.prefix}joining`;
      const dlqTopic = `${kafka.prefix}${TOPICS.dlq(TOPICS.enrollments)}`;
      await produceDeadLetter(kafka.kafka, dlqTopic, buildDecisionLetter(kafka.prefix));
      // A member of the group that cannot rejoin until its message is done: the broker holds the
      // join of any new member meanwhile, as it holds it for a killed process's member.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let holding = false;
      const other = kafka.kafka.consumer({ groupId, sessionTimeout: 30_000, rebalanceTimeout: 60_000 });
      await other.connect();
      await other.subscribe({ topic: dlqTopic, fromBeginning: true });
      await other.run({
        eachMessage: async () => {
          holding = true;
          await held;
        },
      });
      await waitFor(async () => holding);
      const started = createDeadLetterIndexer({
        db: database.db,
        kafka: kafka.kafka,
        logger,
        topicPrefix: kafka.prefix,
        groupId,
      });
      const admin = kafka.kafka.admin();
      await admin.connect();
      const inGroup = async () => ((await started.health().details(admin)) as { inGroup: boolean }).inGroup;
      try {
        await started.start();
        // start() returned while the join waits: ready, not yet in its group.
        expect(await inGroup()).toBe(false);
        expect(started.health().check()).toBe(true);
        release();
        await waitFor(inGroup);
        expect(started.health().check()).toBe(true);
      } finally {
        release();
        await other.disconnect();
        await admin.disconnect();
        await started.stop();
      }
      expect(started.health().check()).toBe('the consumer is stopped');
    });
  });
});
