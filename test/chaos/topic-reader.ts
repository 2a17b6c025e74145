import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';

/** One Kafka message as read back at the end of the run. */
export interface ReadMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string;
  headers: Record<string, string>;
  /** The message's Kafka timestamp (ms since epoch, as a string): when it landed on the topic. */
  timestamp?: string;
}

/**
 * Reads every message of the given topics from the beginning up to their high-water marks at
 * the time of the call, with a fresh consumer group (so nothing the system's own consumers did
 * affects it). Topics are physical names.
 */
export async function readTopics(brokers: string, topics: string[]): Promise<Map<string, ReadMessage[]>> {
  const kafka = new Kafka({ clientId: 'chaos-reader', brokers: [brokers], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const existing = new Set(await admin.listTopics());
  const wanted = topics.filter((t) => existing.has(t));
  const remaining = new Map<string, bigint>();
  for (const topic of wanted) {
    for (const p of await admin.fetchTopicOffsets(topic)) {
      const high = BigInt(p.high);
      if (high > BigInt(p.low)) remaining.set(`${topic}/${p.partition}`, high);
    }
  }
  await admin.disconnect();
  const out = new Map<string, ReadMessage[]>(wanted.map((t) => [t, []]));
  if (remaining.size === 0) return out;

  const consumer = kafka.consumer({ groupId: `chaos-reader-${randomBytes(6).toString('hex')}` });
  await consumer.connect();
  await consumer.subscribe({ topics: wanted, fromBeginning: true });
  // Transaction markers take offsets too, so the last message may sit below the high-water mark:
  // a partition counts as read when nothing more arrives for a while after it came close.
  const lastSeen = new Map<string, bigint>();
  await new Promise<void>((resolve, reject) => {
    let idle: NodeJS.Timeout | undefined;
    const finish = () => {
      clearTimeout(timer);
      clearTimeout(idle);
      resolve();
    };
    const armIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        const stuck = [...remaining].filter(([id, high]) => (lastSeen.get(id) ?? -1n) + 3n < high);
        if (stuck.length === 0) finish();
        else armIdle();
      }, 8000);
    };
    const timer = setTimeout(
      () =>
        reject(
          new Error(
            `reading topics timed out; partitions not read to the end: ${[...remaining.keys()].join(', ')}`,
          ),
        ),
      180_000,
    );
    armIdle();
    consumer
      .run({
        eachMessage: async ({ topic, partition, message }) => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(message.headers ?? {})) {
            const one = Array.isArray(v) ? v[0] : v;
            if (one !== undefined) headers[k] = one.toString();
          }
          out.get(topic)?.push({
            topic,
            partition,
            offset: message.offset,
            key: message.key?.toString() ?? null,
            value: message.value?.toString() ?? '',
            headers,
            timestamp: message.timestamp,
          });
          const id = `${topic}/${partition}`;
          lastSeen.set(id, BigInt(message.offset));
          const high = remaining.get(id);
          if (high !== undefined && BigInt(message.offset) + 1n >= high) {
            remaining.delete(id);
            if (remaining.size === 0) finish();
          }
          armIdle();
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  return out;
}
