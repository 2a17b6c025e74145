import {
  type Kafka,
  type Producer,
  type ProducerConfig,
  Partitioners,
  type ICustomPartitioner,
  type Message,
  type RecordMetadata,
  type TopicMessages,
} from 'kafkajs';
import { PRODUCE_REQUEST } from './kafka-client-settings.js';

/**
 * The one Kafka producer of a process (idempotent, one request in flight: Kafka drops a retried
 * duplicate and keeps order), shared by the relay, the command consumers and the ops API's
 * redrive. Connected on first use, and kept: a failed send is sent again by the same producer,
 * whose id and sequence numbers let the broker drop a copy it wrote already (a new producer's copy
 * is a duplicate). Only when the broker no longer knows its session (`producerSessionLost`) may a
 * user `reset` it: the next `get` connects a fresh one; a reset of a producer already replaced
 * does nothing.
 */
export interface SharedProducer {
  get(): Promise<Producer>;
  reset(failed: Producer): Promise<void>;
  /**
   * Sends `topicMessages` (acks=all) together with the other callers' sends that wait meanwhile:
   * while a request is in flight, the sends that come go together in the next. The producer has
   * one request in flight, so each would wait its turn anyway; together they cost one round trip
   * (a command consumer's results, eight commands at a time: on the test cluster after an outage a
   * result waited about 0.4 s for the sends ahead of it, issue 53). Resolves when Kafka
   * acknowledged every partition the caller's messages went to, with where each landed; rejects
   * with the request's error, or IncompleteSendError when the answer left out one of the caller's
   * partitions (kafkajs issue #1303, see `sendWhole`).
   */
  send(topicMessages: TopicMessages[]): Promise<Map<Message, MessagePosition>>;
  /** Disconnects it: after every user has stopped. */
  close(): Promise<void>;
}

interface QueuedSend {
  topicMessages: TopicMessages[];
  resolve(positions: Map<Message, MessagePosition>): void;
  reject(error: unknown): void;
}

export function createSharedProducer(kafka: Kafka): SharedProducer {
  let current: Promise<Producer> | null = null;
  let connected: Producer | null = null;
  let queued: QueuedSend[] = [];
  let sending = false;

  /** Sends what waits, as one request per turn, until nothing does. */
  async function drain(): Promise<void> {
    sending = true;
    while (queued.length > 0) {
      const turn = queued;
      queued = [];
      const byTopic = new Map<string, Message[]>();
      for (const { topicMessages } of turn)
        for (const { topic, messages } of topicMessages) {
          const list = byTopic.get(topic) ?? [];
          list.push(...messages);
          byTopic.set(topic, list);
        }
      const together = [...byTopic].map(([topic, messages]) => ({ topic, messages }));
      try {
        const answer = await (await get()).sendBatch({ ...PRODUCE_REQUEST, topicMessages: together });
        const positions = messagePositions(together, answer);
        for (const caller of turn) {
          const incomplete = incompleteSend(caller.topicMessages, answer);
          if (incomplete) caller.reject(incomplete);
          else caller.resolve(positions);
        }
      } catch (error) {
        for (const caller of turn) caller.reject(error);
      }
    }
    sending = false;
  }

  function get(): Promise<Producer> {
    current ??= (async () => {
      const p = kafka.producer({ ...PRODUCER_CONFIG });
      try {
        await p.connect();
      } catch (error) {
        current = null;
        await p.disconnect().catch(() => undefined);
        throw error;
      }
      connected = p;
      return p;
    })();
    return current;
  }

  return {
    get,
    send(topicMessages) {
      return new Promise((resolve, reject) => {
        queued.push({ topicMessages, resolve, reject });
        if (!sending) void drain();
      });
    },
    async reset(failed) {
      if (connected !== failed) return;
      connected = null;
      current = null;
      await failed.disconnect().catch(() => undefined);
    },
    async close() {
      const p = connected;
      connected = null;
      current = null;
      await p?.disconnect().catch(() => undefined);
    },
  };
}

/**
 * Which partition each message went to, recorded as the partitioner picks it, serves twice:
 *
 * - where each message of a send landed (topic, partition, offset), so a trace can point at it with a
 * Kafka tool. kafkajs answers a send with one base offset per partition, not per message; the
 * partition each message went to is recorded as the partitioner picks it (the default one,
 * unchanged), and a message's offset is its partition's base offset plus its place among that
 * partition's messages of the send (one produce request per partition, in order).
 */

/** The partition a message went to, kept on the message (a WeakMap of every message sent cost the GC). */
const PARTITION = Symbol('rentbridge.partition');
type Placed = Message & { [PARTITION]?: number };
const partitionOf = (message: Message): number | undefined =>
  message.partition ?? (message as Placed)[PARTITION];

/**
 * Kafka's murmur2 of a key, as kafkajs's default partitioner and the Java client compute it, in
 * 32-bit integer arithmetic: kafkajs computes it with 64-bit Long objects and keeps only the low
 * 32 bits, a few µs per message of the relay's drain.
 */
export function murmur2(key: Buffer): number {
  const m = 0x5bd1e995;
  const length = key.length;
  let h = 0x9747b28c ^ length;
  const whole = length - (length % 4);
  for (let i = 0; i < whole; i += 4) {
    let k = key[i]! | (key[i + 1]! << 8) | (key[i + 2]! << 16) | (key[i + 3]! << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    h = Math.imul(h, m) ^ Math.imul(k, m);
  }
  const rest = length % 4;
  if (rest === 3) h ^= key[whole + 2]! << 16;
  if (rest >= 2) h ^= key[whole + 1]! << 8;
  if (rest >= 1) h = Math.imul(h ^ key[whole]!, m);
  h ^= h >>> 13;
  h = Math.imul(h, m);
  return h ^ (h >>> 15);
}

/**
 * kafkajs 2's default partitioner (murmur2 on the key, as the Java client), remembering its pick;
 * a keyed message's partition is computed here the same way, faster.
 */
export const recordingPartitioner: ICustomPartitioner = () => {
  const pick = Partitioners.DefaultPartitioner();
  return (args) => {
    const { message, partitionMetadata } = args;
    const partition =
      message.partition ??
      (message.key == null
        ? pick(args)
        : (murmur2(Buffer.isBuffer(message.key) ? message.key : Buffer.from(String(message.key))) &
            0x7fffffff) %
          partitionMetadata.length);
    (message as Placed)[PARTITION] = partition;
    return partition;
  };
};

export interface MessagePosition {
  /** Physical topic name (with KAFKA_TOPIC_PREFIX). */
  topic: string;
  partition: number;
  offset: string;
}

/** An offset (int64, as text) plus a small count: in doubles while exact, else in BigInt. */
function plus(offset: string, n: number): string {
  const sum = Number(offset) + n;
  return Number.isSafeInteger(sum) ? String(sum) : (BigInt(offset) + BigInt(n)).toString();
}

/** The position of every message of `topicMessages` that Kafka acknowledged in `metadata`. */
export function messagePositions(
  topicMessages: Array<{ topic: string; messages: Message[] }>,
  metadata: RecordMetadata[],
): Map<Message, MessagePosition> {
  const positions = new Map<Message, MessagePosition>();
  for (const { topic, messages } of topicMessages) {
    const base = new Map<number, string>();
    for (const m of metadata) {
      if (m.topicName === topic && m.baseOffset !== undefined) base.set(m.partition, m.baseOffset);
    }
    const seen = new Map<number, number>();
    for (const message of messages) {
      const partition = partitionOf(message);
      if (partition === undefined) continue;
      const first = base.get(partition);
      const index = seen.get(partition) ?? 0;
      seen.set(partition, index + 1);
      if (first === undefined) continue;
      positions.set(message, { topic, partition, offset: plus(first, index) });
    }
  }
  return positions;
}

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

/** The partitions some message was sent to that the answer does not acknowledge (-1: never sent). */
export function unacknowledgedPartitions(messages: Message[], answer: RecordMetadata[]): number[] {
  const acknowledged = new Set(answer.filter((r) => r.errorCode === 0).map((r) => r.partition));
  const missing = new Set<number>();
  for (const message of messages) {
    const partition = partitionOf(message);
    if (partition === undefined) missing.add(-1);
    else if (!acknowledged.has(partition)) missing.add(partition);
  }
  return [...missing].sort((a, b) => a - b);
}

/**
 * - a batch checked whole: kafkajs can resolve a `sendBatch` that wrote only part of its messages.
 *   It keeps the answer of every broker that acknowledged, and when a retry finds a failed broker's
 *   partitions now led by one that already answered, it never sends them there (kafkajs issue
 *   #1303; seen on a three-broker cluster with two brokers killed: 68 of 100 rows acknowledged and
 *   marked published were not on Kafka).
 *
 * `sendBatch` (acks=all) of one topic's messages that resolves only when Kafka acknowledged every
 * partition they went to, with where each landed. The producer must use `recordingPartitioner`.
 */
export async function sendWhole(
  producer: Producer,
  topic: string,
  messages: Message[],
): Promise<Map<Message, MessagePosition>> {
  const topicMessages = [{ topic, messages }];
  const answer = await producer.sendBatch({ ...PRODUCE_REQUEST, topicMessages });
  const incomplete = incompleteSend(topicMessages, answer);
  if (incomplete) throw incomplete;
  return messagePositions(topicMessages, answer);
}

/** The error for the first topic of a send whose partitions the answer does not all acknowledge. */
function incompleteSend(
  topicMessages: TopicMessages[],
  answer: RecordMetadata[],
): IncompleteSendError | null {
  for (const { topic, messages } of topicMessages) {
    const missing = unacknowledgedPartitions(
      messages,
      answer.filter((a) => a.topicName === topic),
    );
    if (missing.length > 0) return new IncompleteSendError(topic, missing);
  }
  return null;
}

/**
 * How rentbridge's producers are made: idempotent with one request in flight (Kafka drops a
 * retried duplicate and keeps order), no topic auto-creation (topics exist only as
 * src/kafka/topics.ts makes them), and the partitioner named rather than defaulted: kafkajs 2's
 * default, murmur2 on the key as the Java client, so one record's messages land on the same
 * partition whichever client wrote them; wrapped to remember each message's partition for the
 * trace (`recordingPartitioner` above). Named, kafkajs logs no notice about its change of default.
 */
export const PRODUCER_CONFIG: Readonly<ProducerConfig> = Object.freeze({
  idempotent: true,
  maxInFlightRequests: 1,
  allowAutoTopicCreation: false,
  createPartitioner: recordingPartitioner,
});

/**
 * Errors by which the broker says it no longer knows the producer's session (its id expired, its
 * epoch fenced) or lost its sequence: the same producer can never send again, a new one must.
 * Anything else (time-outs, lost connections, leaders moving, too few replicas) is retried by the
 * same producer.
 */
const SESSION_LOST = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'INVALID_PRODUCER_ID_MAPPING',
  'PRODUCER_FENCED',
]);

export function producerSessionLost(error: unknown): boolean {
  const seen = new Set<unknown>();
  const stack: unknown[] = [error];
  while (stack.length > 0) {
    const e = stack.pop() as { type?: string; cause?: unknown; originalError?: unknown } | undefined;
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    if (e.type && SESSION_LOST.has(e.type)) return true;
    stack.push(e.cause, e.originalError);
  }
  return false;
}
