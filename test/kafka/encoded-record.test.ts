import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import type { KafkaMessage, Message } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENCODED_BODY, encodeRecordBody, withEncodedRecords } from '../../src/kafka/encoded-record.js';
import { sendWhole } from '../../src/kafka/message-positions.js';
import { createSharedProducer, type SharedProducer } from '../../src/kafka/shared-producer.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';

/**
 * The relay encodes each record's key, value and headers itself, once, and kafkajs (patched by
 * patches/kafkajs+2.2.4.patch) writes only the fields that depend on the record's place in the
 * batch. Held here to kafkajs's own encoder, byte for byte, and to the real broker.
 */
type RecordArgs = Message & { offsetDelta?: number; timestampDelta?: number; [ENCODED_BODY]?: Buffer };
const Record = createRequire(import.meta.url)('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (
  args: RecordArgs,
) => { buffer: Buffer };

const kafkajsBytes = (message: Message, offsetDelta: number, timestampDelta: number): Buffer =>
  Record({ ...message, offsetDelta, timestampDelta }).buffer;
const encodedBytes = (message: Message, offsetDelta: number, timestampDelta: number): Buffer =>
  Record({ ...message, offsetDelta, timestampDelta, [ENCODED_BODY]: encodeRecordBody(message) }).buffer;

const MESSAGES: Array<[string, Message]> = [
  [
    'a CloudEvent as the relay sends it',
    {
      key: 'app-42',
      value: JSON.stringify({ specversion: '1.0', id: 'e1', data: { note: 'x'.repeat(300) } }),
      headers: {
        'partner-request-id': 'req_1',
        'content-type': 'application/cloudevents+json; charset=UTF-8',
        ce_id: 'e1',
        ce_type: 'partner.application.updated',
      },
    },
  ],
  ['a tombstone (null value)', { key: 'cust-1', value: null, headers: { traceparent: '00-abc-def-01' } }],
  ['no key, no headers', { key: null, value: Buffer.from([0, 1, 2, 255]) }],
  [
    'text in several bytes per character',
    { key: 'clé-日本', value: 'Zoë 🏠 paid €1,250', headers: { ünïcode: 'välue ✓' } },
  ],
  ['a value past one- and two-byte varint lengths', { key: 'k', value: 'v'.repeat(20_000) }],
  [
    'Buffer and repeated header values',
    { key: Buffer.from('raw-key'), value: 'x', headers: { a: Buffer.from('bytes'), b: ['one', 'two'] } },
  ],
];

describe('a record encoded by the relay', () => {
  it.each(MESSAGES)('is the bytes kafkajs encodes for %s', (_, message) => {
    for (const [offsetDelta, timestampDelta] of [
      [0, 0],
      [1, 0],
      [63, 5],
      [64, -3],
      [999, 1_700_000_000_000],
    ]) {
      expect(
        encodedBytes(message, offsetDelta!, timestampDelta!).equals(
          kafkajsBytes(message, offsetDelta!, timestampDelta!),
        ),
      ).toBe(true);
    }
  });

  it('is taken as given by kafkajs (the patch is applied by npm ci)', () => {
    // A body that disagrees with the message's fields shows which one kafkajs wrote.
    const message = { key: 'a', value: 'b', [ENCODED_BODY]: encodeRecordBody({ key: 'x', value: 'y' }) };
    expect(
      Record({ ...message, offsetDelta: 0, timestampDelta: 0 }).buffer.equals(
        kafkajsBytes({ key: 'x', value: 'y' }, 0, 0),
      ),
    ).toBe(true);
  });

  it('shares one buffer across a read, each record the bytes of its own', () => {
    const messages = MESSAGES.map(([, m]) => ({ ...m }));
    withEncodedRecords(messages);
    const bodies = messages.map((m) => (m as RecordArgs)[ENCODED_BODY]!);
    expect(new Set(bodies.map((b) => b.buffer)).size).toBe(1);
    bodies.forEach((body, i) => expect(body.equals(encodeRecordBody(messages[i]!))).toBe(true));
  });
});

describe('records encoded by the relay, on the real broker', () => {
  const TOPIC = 'partner.applications';
  let kafka: TestKafka;
  let producer: SharedProducer;

  beforeAll(async () => {
    kafka = createTestKafka();
    await kafka.createTopics([TOPIC]);
    producer = createSharedProducer(kafka.kafka);
  });
  afterAll(async () => {
    await producer?.close();
    await kafka?.close();
  });

  it('are read back by a consumer as the messages they were built from', async () => {
    const messages: Message[] = Array.from({ length: 200 }, (_, i) => ({
      key: `app-${i % 7}`,
      value: i % 50 === 0 ? null : JSON.stringify({ i, text: 'é'.repeat(i) }),
      headers: { ce_id: `e-${i}`, 'partner-request-id': `req_${i}` },
    }));
    withEncodedRecords(messages);
    const landed = await sendWhole(await producer.get(), `${kafka.prefix}${TOPIC}`, messages);

    const read = await readWithPositions(kafka, TOPIC, messages.length);
    expect(read.size).toBe(messages.length);
    for (const message of messages) {
      const { partition, offset } = landed.get(message)!;
      const got = read.get(`${partition}@${offset}`)!;
      expect(got.key?.toString()).toBe(message.key);
      expect(got.value?.toString() ?? null).toBe(message.value);
      expect(
        Object.fromEntries(Object.entries(got.headers ?? {}).map(([k, v]) => [k, v?.toString()])),
      ).toEqual(message.headers);
    }
  });
});

/** Every message of `topic`, by `partition@offset`. */
async function readWithPositions(
  kafka: TestKafka,
  topic: string,
  count: number,
): Promise<Map<string, KafkaMessage>> {
  const consumer = kafka.kafka.consumer({ groupId: `encoded-record-${randomUUID()}` });
  const out = new Map<string, KafkaMessage>();
  await consumer.connect();
  await consumer.subscribe({ topic: `${kafka.prefix}${topic}`, fromBeginning: true });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 20_000);
    void consumer.run({
      eachMessage: async ({ message, partition }) => {
        out.set(`${partition}@${message.offset}`, message);
        if (out.size >= count) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  return out;
}
