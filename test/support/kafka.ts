import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Consumer, type KafkaMessage } from 'kafkajs';
import { afterAll, beforeAll, expect, inject, vi } from 'vitest';
import { createSharedProducer, type SharedProducer } from '../../src/kafka/shared-producer.js';
import { ensureTopics } from '../../src/kafka/topics.js';

/** A message read back, with the partition it was read from. */
export type ReadMessage = KafkaMessage & { partition: number };

export interface TestKafka {
  kafka: Kafka;
  brokers: string[];
  /** A random KAFKA_TOPIC_PREFIX: each test file has its own topics. */
  prefix: string;
  /** Creates every rentbridge topic under the prefix (or only `topics`). */
  createTopics(topics?: string[]): Promise<void>;
  /**
   * Reads `topic` (logical name) from the beginning until `count` messages arrived or `timeoutMs`;
   * each message says its partition.
   */
  readMessages(topic: string, count: number, timeoutMs?: number): Promise<ReadMessage[]>;
  /**
   * Waits until consumer group `groupId` has committed past `offset` on `partition` of `topic`
   * (logical name): it has read that message and everything before it there.
   */
  committedPast(groupId: string, at: { topic: string; partition: number; offset: string }): Promise<void>;
  close(): Promise<void>;
}

export function createTestKafka(): TestKafka {
  const brokers = inject('kafkaBrokers').split(',');
  const prefix = `t${randomBytes(4).toString('hex')}.`;
  const kafka = new Kafka({ clientId: 'rentbridge-test', brokers, logLevel: logLevel.NOTHING });
  const consumers: Consumer[] = [];
  return {
    kafka,
    brokers,
    prefix,
    async createTopics(topics) {
      const admin = kafka.admin();
      await admin.connect();
      try {
        await ensureTopics(admin, { prefix, partitions: 3, topics });
      } finally {
        await admin.disconnect();
      }
    },
    async readMessages(topic, count, timeoutMs = 20_000) {
      const consumer = kafka.consumer({ groupId: `test-${randomBytes(6).toString('hex')}` });
      consumers.push(consumer);
      const messages: ReadMessage[] = [];
      await consumer.connect();
      await consumer.subscribe({ topic: `${prefix}${topic}`, fromBeginning: true });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        void consumer.run({
          eachMessage: async ({ message, partition }) => {
            messages.push({ ...message, partition });
            if (messages.length >= count) {
              clearTimeout(timer);
              resolve();
            }
          },
        });
      });
      await consumer.disconnect();
      return messages;
    },
    async committedPast(groupId, at) {
      const admin = kafka.admin();
      await admin.connect();
      try {
        await vi.waitFor(
          async () => {
            const [offsets] = await admin.fetchOffsets({ groupId, topics: [`${prefix}${at.topic}`] });
            const committed = offsets?.partitions.find((p) => p.partition === at.partition)?.offset ?? '-1';
            expect(BigInt(committed)).toBeGreaterThan(BigInt(at.offset));
          },
          { timeout: 20_000, interval: 100 },
        );
      } finally {
        await admin.disconnect();
      }
    },
    async close() {
      await Promise.all(consumers.map((c) => c.disconnect().catch(() => undefined)));
    },
  };
}

/**
 * `topics` under a prefix of the test's own and the process's shared producer (the relay's) on the
 * broker, as hooks of the calling `describe`; read the fields inside tests and hooks.
 */
export function useSharedProducer(topics: string[]): {
  readonly kafka: TestKafka;
  readonly producer: SharedProducer;
} {
  let kafka: TestKafka | undefined;
  let producer: SharedProducer | undefined;
  beforeAll(async () => {
    kafka = createTestKafka();
    await kafka.createTopics(topics);
    producer = createSharedProducer(kafka.kafka);
  });
  afterAll(async () => {
    await producer?.close();
    await kafka?.close();
  });
  return {
    get kafka() {
      return kafka!;
    },
    get producer() {
      return producer!;
    },
  };
}
