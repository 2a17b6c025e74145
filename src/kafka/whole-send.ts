import {
  Partitioners,
  type ICustomPartitioner,
  type Message,
  type Producer,
  type RecordMetadata,
} from 'kafkajs';

/**
 * kafkajs can resolve a `sendBatch` that wrote only part of its messages: it keeps the answer of
 * every broker that acknowledged, and when a retry finds a failed broker's partitions led by one
 * that already answered, it never sends them there (kafkajs issue #1303). Seen on the three-broker
 * cluster with two brokers killed: 68 of 100 rows acknowledged and marked published were not on
 * Kafka. So a batch is checked whole: every partition one of its messages went to must be in the
 * answer, else the send failed and its rows are sent again (at least once).
 */

/** The partition kafkajs last chose for each message (the partitioner below writes it). */
const chosen = new WeakMap<Message, number>();

/**
 * kafkajs's default partitioner (murmur2, as Kafka's Java client: the same key, the same
 * partition, whoever produces), remembering each message's partition. Given explicitly, it also
 * keeps kafkajs from logging its v2 partitioner notice at every start.
 */
export const recordingPartitioner: ICustomPartitioner = () => {
  const partition = Partitioners.DefaultPartitioner();
  return (args) => {
    const p = partition(args);
    chosen.set(args.message, p);
    return p;
  };
};

/** A batch Kafka answered without writing all of it: retriable, nothing of it may be marked sent. */
export class IncompleteSendError extends Error {
  readonly retriable = true;
  constructor(
    readonly topic: string,
    readonly missingPartitions: number[],
  ) {
    super(
      `Kafka acknowledged the batch for ${topic} without partition(s) ${missingPartitions.join(', ')}: it is sent again`,
    );
    this.name = 'IncompleteSendError';
  }
}

/** The partitions some message was sent to that the answer does not acknowledge. */
export function unacknowledgedPartitions(messages: Message[], answer: RecordMetadata[]): number[] {
  const acknowledged = new Set(answer.filter((r) => r.errorCode === 0).map((r) => r.partition));
  const missing = new Set<number>();
  for (const message of messages) {
    const partition = message.partition ?? chosen.get(message);
    // A message no partitioner saw was never sent: -1 names it.
    if (partition === undefined) missing.add(-1);
    else if (!acknowledged.has(partition)) missing.add(partition);
  }
  return [...missing].sort((a, b) => a - b);
}

/**
 * `sendBatch` of one topic's messages (acks=all) that resolves only when Kafka acknowledged every
 * partition they went to. The producer must have been made with `recordingPartitioner`.
 */
export async function sendWhole(
  producer: Producer,
  topic: string,
  messages: Message[],
): Promise<RecordMetadata[]> {
  const answer = await producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages }] });
  const missing = unacknowledgedPartitions(messages, answer);
  if (missing.length > 0) throw new IncompleteSendError(topic, missing);
  return answer;
}
