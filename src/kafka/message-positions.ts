import { Partitioners, type ICustomPartitioner, type Message, type RecordMetadata } from 'kafkajs';

/**
 * Where each message of a send landed (topic, partition, offset), so a trace can point at it with a
 * Kafka tool. kafkajs answers a send with one base offset per partition, not per message; the
 * partition each message went to is recorded as the partitioner picks it (the default one,
 * unchanged), and a message's offset is its partition's base offset plus its place among that
 * partition's messages of the send (one produce request per partition, in order).
 */

const partitionOf = new WeakMap<Message, number>();

/** kafkajs 2's default partitioner (murmur2 on the key, as the Java client), remembering its pick. */
export const recordingPartitioner: ICustomPartitioner = () => {
  const pick = Partitioners.DefaultPartitioner();
  return (args) => {
    const partition = pick(args);
    partitionOf.set(args.message, partition);
    return partition;
  };
};

export interface MessagePosition {
  /** Physical topic name (with KAFKA_TOPIC_PREFIX). */
  topic: string;
  partition: number;
  offset: string;
}

/** The position of every message of `topicMessages` that Kafka acknowledged in `metadata`. */
export function messagePositions(
  topicMessages: Array<{ topic: string; messages: Message[] }>,
  metadata: RecordMetadata[],
): Map<Message, MessagePosition> {
  const base = new Map(metadata.map((m) => [`${m.topicName}|${m.partition}`, m.baseOffset]));
  const seen = new Map<string, number>();
  const positions = new Map<Message, MessagePosition>();
  for (const { topic, messages } of topicMessages) {
    for (const message of messages) {
      const partition = message.partition ?? partitionOf.get(message);
      if (partition === undefined) continue;
      const key = `${topic}|${partition}`;
      const first = base.get(key);
      const index = seen.get(key) ?? 0;
      seen.set(key, index + 1);
      if (first === undefined) continue;
      positions.set(message, { topic, partition, offset: (BigInt(first) + BigInt(index)).toString() });
    }
  }
  return positions;
}
