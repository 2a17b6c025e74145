import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { Partitioners, type Message, type PartitionMetadata } from 'kafkajs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ENCODED_BODY, encodeRecordBody, withEncodedRecords } from '../../src/kafka/encoded-record.js';
import {
  murmur2,
  recordingPartitioner,
  sendWhole,
  type SharedProducer,
} from '../../src/kafka/shared-producer.js';
import { useSharedProducer, type TestKafka } from '../support/kafka.js';

/**
 * The relay encodes each record's key, value and headers itself, once, and kafkajs (patched by
 * patches/kafkajs+2.2.4.patch, applied by `npm ci`) writes a batch of such records into one buffer,
 * adding only the fields that depend on a record's place in the batch. Held here to kafkajs's own
 * encoder as published (kafkajs-stock), byte for byte, and to the real broker; so are the patch's native CRC-32C and the
 * relay's murmur2.
 */
const resolve = createRequire(import.meta.url).resolve;
/** The project's kafkajs (patched) and kafkajs 2.2.4 as published (the `kafkajs-stock` alias). */
const kafkajs = createRequire(resolve('kafkajs'));
const stock = createRequire(resolve('kafkajs-stock'));
type Encoded = Message & { [ENCODED_BODY]?: Buffer };
type ProduceRequest = (args: {
  acks: number;
  timeout: number;
  compression?: number;
  topicData: Array<{
    topic: string;
    partitions: Array<{ partition: number; firstSequence: number; messages: Message[] }>;
  }>;
}) => { encode(): Promise<{ buffer: Buffer }> };

/** A produce request's bytes for one partition's messages (as the relay's producer sends them). */
async function requestBytes(messages: Message[], compression = 0, client = kafkajs): Promise<Buffer> {
  const produceRequest = client('./src/protocol/requests/produce/v3/request.js') as ProduceRequest;
  const request = produceRequest({
    acks: -1,
    timeout: 30_000,
    compression,
    topicData: [{ topic: 't', partitions: [{ partition: 0, firstSequence: 7, messages }] }],
  });
  return (await request.encode()).buffer;
}

/** The same messages' request as the published kafkajs encodes it (from their fields alone). */
const stockBytes = (messages: Message[], compression = 0): Promise<Buffer> =>
  requestBytes(
    messages.map(({ key, value, headers, timestamp }) => ({ key, value, headers, timestamp })),
    compression,
    stock,
  );

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

describe('records encoded by the relay', () => {
  const messages = (): Message[] => MESSAGES.map(([, m]) => ({ ...m, timestamp: '1700000000000' }));

  it.each(MESSAGES)('are the bytes kafkajs encodes for %s', async (_, message) => {
    // 70 records: offset deltas past one byte. A timestamp of their own: the batch's is the same twice.
    const batch = Array.from({ length: 70 }, () => ({ ...message, timestamp: '1700000000000' }));
    const encoded = await requestBytes(withEncodedRecords(batch));
    expect(encoded.equals(await stockBytes(batch))).toBe(true);
  });

  it('are the bytes kafkajs encodes with timestamps of their own, near and far', async () => {
    const batch = messages().map((m, i) => ({ ...m, timestamp: String(1_700_000_000_000 + i * 1_000) }));
    batch.push({ key: 'late', value: 'v', timestamp: String(1_700_000_000_000 + 40 * 86_400_000) });
    expect((await requestBytes(withEncodedRecords(batch))).equals(await stockBytes(batch))).toBe(true);
  });

  it('are written as given by kafkajs: the patch is applied', async () => {
    // Bodies that disagree with the messages' fields show which ones kafkajs wrote.
    const batch: Encoded[] = [
      { key: 'a', value: 'b' },
      { key: 'c', value: 'd' },
    ];
    const others: Message[] = [
      { key: 'x', value: 'y' },
      { key: 'z', value: 'w' },
    ];
    batch.forEach((m, i) => (m[ENCODED_BODY] = encodeRecordBody(others[i]!)));
    const withTime = (ms: Message[]) => ms.map((m) => ({ ...m, timestamp: '1' }));
    expect((await requestBytes(withTime(batch))).equals(await stockBytes(withTime(others)))).toBe(true);
  });

  it('fall back to kafkajs encoding them when one of the batch is not encoded, or when compressed', async () => {
    // Bodies that disagree with the fields: kafkajs's own records are of the fields.
    const stale = messages().map((m) => ({
      ...m,
      [ENCODED_BODY]: encodeRecordBody({ key: 'x', value: 'y' }),
    }));
    const mixed = [...stale, { key: 'unencoded', value: 'v', timestamp: '1700000000000' }];
    expect((await requestBytes(mixed)).equals(await stockBytes(mixed))).toBe(true);
    const gzip = 1;
    expect((await requestBytes(stale, gzip)).equals(await stockBytes(stale, gzip))).toBe(true);
  });

  it('share one buffer across a read, each record the bytes of its own', () => {
    const batch = MESSAGES.map(([, m]) => ({ ...m }));
    withEncodedRecords(batch);
    const bodies = batch.map((m) => (m as Encoded)[ENCODED_BODY]!);
    expect(new Set(bodies.map((b) => b.buffer)).size).toBe(1);
    bodies.forEach((body, i) => expect(body.equals(encodeRecordBody(batch[i]!))).toBe(true));
  });
});

describe("the checksum and partitioner of the relay's sends", () => {
  it('CRC-32C: the native one kafkajs uses is the JavaScript one, on any bytes', () => {
    const native = kafkajs('./src/protocol/recordBatch/crc32C/index.js') as (b: Buffer) => number;
    const javascript = kafkajs('./src/protocol/recordBatch/crc32C/crc32C.js') as (b: Buffer) => number;
    expect(native(Buffer.from('123456789'))).toBe(0xe3069283); // the standard check value
    for (let n = 0; n < 600; n += 7) {
      const bytes = randomBytes(n * 13).subarray(n % 5);
      expect(native(bytes)).toBe(javascript(bytes));
    }
    expect(() => kafkajs.resolve('@node-rs/crc32')).not.toThrow();
  });

  it("murmur2 and the partition it gives are kafkajs's default partitioner's, for any key", () => {
    const reference = kafkajs('./src/producer/partitioners/default/murmur2.js') as (k: Buffer) => number;
    const pick = Partitioners.DefaultPartitioner();
    const recording = recordingPartitioner();
    for (let i = 0; i < 5_000; i++) {
      const key = i % 2 ? randomBytes(i % 41) : `app-${i}-é😀`.slice(0, i % 13);
      expect(murmur2(Buffer.from(key))).toBe(reference(Buffer.from(key)));
      const partitionMetadata = Array.from({ length: 1 + (i % 12) }, (_, partitionId) => ({
        partitionId,
        leader: 1,
      })) as PartitionMetadata[];
      const args = { topic: 't', partitionMetadata, message: { key, value: 'v' } };
      expect(recording(args)).toBe(pick(args));
    }
  });
});

describe('records encoded by the relay, on the real broker', () => {
  const TOPIC = 'partner.applications';
  const broker = useSharedProducer([TOPIC]);
  let kafka: TestKafka;
  let producer: SharedProducer;
  beforeAll(() => ({ kafka, producer } = broker));

  it('are read back by a consumer as the messages they were built from', async () => {
    const messages: Message[] = Array.from({ length: 200 }, (_, i) => ({
      key: `app-${i % 7}`,
      value: i % 50 === 0 ? null : JSON.stringify({ i, text: 'é'.repeat(i) }),
      headers: { ce_id: `e-${i}`, 'partner-request-id': `req_${i}` },
    }));
    withEncodedRecords(messages);
    const landed = await sendWhole(await producer.get(), `${kafka.prefix}${TOPIC}`, messages);

    const read = new Map(
      (await kafka.readMessages(TOPIC, messages.length)).map((m) => [`${m.partition}@${m.offset}`, m]),
    );
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
