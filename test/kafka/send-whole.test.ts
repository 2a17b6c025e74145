import { Partitioners, type Message, type PartitionMetadata } from 'kafkajs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  IncompleteSendError,
  sendWhole,
  unacknowledgedPartitions,
  type SharedProducer,
} from '../../src/kafka/shared-producer.js';
import { useSharedProducer, type TestKafka } from '../support/kafka.js';

/**
 * kafkajs may resolve a batch it wrote only in part (its issue #1303: seen losing relay rows on a
 * cluster with two brokers killed). The relay's sends are checked whole against the partitions
 * the partitioner chose, and say where each message landed; both held to the real broker here.
 */
describe('a batch sent whole', () => {
  const TOPIC = 'commands.rental-payments';
  const OUTCOMES = 'outcomes.rental-payments';
  const broker = useSharedProducer([TOPIC, OUTCOMES]);
  let kafka: TestKafka;
  let producer: SharedProducer;
  beforeAll(() => ({ kafka, producer } = broker));

  const build = (n: number, tag: string): Message[] =>
    Array.from({ length: n }, (_, i) => ({ key: `record-${i}`, value: JSON.stringify({ tag, i }) }));

  describe('when the broker acknowledges every partition', () => {
    it("says where each message landed, on its key's partition under Kafka's default partitioner", async () => {
      const messages = build(60, 'whole');
      const landed = await sendWhole(await producer.get(), `${kafka.prefix}${TOPIC}`, messages);
      expect(landed.size).toBe(messages.length);

      const consumed = await kafka.readMessages(TOPIC, messages.length);
      expect(consumed).toHaveLength(messages.length);
      // The same key lands where any producer with the default partitioner puts it (a redrive's).
      const pick = Partitioners.DefaultPartitioner();
      const partitionMetadata = [0, 1, 2].map(
        (partitionId) => ({ partitionId, leader: 1 }) as PartitionMetadata,
      );
      for (const message of messages) {
        const position = landed.get(message)!;
        const read = consumed.find((c) => c.value?.toString() === message.value)!;
        expect(position).toMatchObject({ partition: read.partition, offset: read.offset });
        expect(position.partition).toBe(pick({ topic: TOPIC, partitionMetadata, message }));
      }
    });
  });

  describe('when the answer leaves a partition out', () => {
    it('names the partition, so the batch is sent again instead of marked sent', async () => {
      const messages = build(30, 'partial');
      const topicMessages = [{ topic: `${kafka.prefix}${TOPIC}`, messages }];
      const answer = await (await producer.get()).sendBatch({ acks: -1, topicMessages });
      expect(unacknowledgedPartitions(messages, answer)).toEqual([]);

      const dropped = answer[0]!.partition;
      expect(
        unacknowledgedPartitions(
          messages,
          answer.filter((a) => a.partition !== dropped),
        ),
      ).toEqual([dropped]);
      // A partition answered with an error is not acknowledged either.
      const failed = answer.map((a) => (a.partition === dropped ? { ...a, errorCode: 6 } : a));
      expect(unacknowledgedPartitions(messages, failed)).toEqual([dropped]);
      expect(new IncompleteSendError(TOPIC, [dropped]).retriable).toBe(true);
    });

    it('counts a message no partitioner saw as not sent', () => {
      expect(unacknowledgedPartitions([{ key: 'never-sent', value: 'x' }], [])).toEqual([-1]);
    });
  });

  describe("when several callers send while a request is in flight (a consumer's results)", () => {
    it('sends those that waited in one request, and tells each caller where its own messages landed', async () => {
      const p = await producer.get();
      const requests: string[] = [];
      const off = p.on(p.events.REQUEST, (e) => requests.push(e.payload.apiName));
      const topic = `${kafka.prefix}${OUTCOMES}`;
      // Ten callers at once, each a message of its own record; the first goes at once, alone.
      const sends = build(10, 'together').map((message) => ({
        message,
        landed: producer.send([{ topic, messages: [message] }]),
      }));
      const results = await Promise.all(sends.map((s) => s.landed));
      off();
      expect(requests.filter((r) => r === 'Produce')).toHaveLength(2);
      const consumed = await kafka.readMessages(OUTCOMES, 10);
      for (const [i, { message }] of sends.entries()) {
        const read = consumed.find((c) => c.value?.toString() === message.value)!;
        expect(results[i]!.get(message)).toMatchObject({ partition: read.partition, offset: read.offset });
      }
    });
  });
});
