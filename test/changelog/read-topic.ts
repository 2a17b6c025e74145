import { randomBytes } from 'node:crypto';
import type { Kafka, KafkaMessage } from 'kafkajs';

/**
 * Reads a topic from offset 0 to its end as a new consumer group would, then leaves the group:
 * every message with its partition, in partition order.
 */
export async function readWholeTopic(
  kafka: Kafka,
  topic: string,
  timeoutMs = 60_000,
): Promise<Array<{ partition: number; message: KafkaMessage }>> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const remaining = new Map(
    ends.filter((e) => BigInt(e.high) > BigInt(e.low)).map((e) => [e.partition, BigInt(e.high)]),
  );
  const out: Array<{ partition: number; message: KafkaMessage }> = [];
  if (remaining.size === 0) return out;
  const consumer = kafka.consumer({ groupId: `changelog-${randomBytes(6).toString('hex')}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${topic} not read to its end in time`)), timeoutMs);
      consumer
        .run({
          eachMessage: async ({ partition, message }) => {
            out.push({ partition, message });
            const high = remaining.get(partition);
            if (high !== undefined && BigInt(message.offset) + 1n >= high) {
              remaining.delete(partition);
              if (remaining.size === 0) {
                clearTimeout(timer);
                resolve();
              }
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return out;
}

/** What a consumer rebuilds from a changelog: key → latest record, a null value deleting the key. */
export function rebuildState(
  messages: Array<{ message: KafkaMessage }>,
): Map<string, { updated_at: string; via: string }> {
  const state = new Map<string, { updated_at: string; via: string }>();
  for (const { message } of messages) {
    const key = message.key!.toString();
    if (message.value === null) {
      state.delete(key);
      continue;
    }
    const event = JSON.parse(message.value.toString()) as {
      data: { updated_at: string; via: string; removed: boolean };
    };
    // A removed event is followed by its tombstone; until then the record reads as removed.
    if (event.data.removed) state.delete(key);
    else state.set(key, { updated_at: event.data.updated_at, via: event.data.via });
  }
  return state;
}
