import type { Kafka, Producer, ProducerConfig } from 'kafkajs';
import { recordingPartitioner } from './message-positions.js';

/**
 * How rentbridge's producers are made: idempotent with one request in flight (Kafka drops a
 * retried duplicate and keeps order), no topic auto-creation (topics exist only as
 * src/kafka/topics.ts makes them), and the partitioner named rather than defaulted: kafkajs 2's
 * default, murmur2 on the key as the Java client, so one record's messages land on the same
 * partition whichever client wrote them; wrapped to remember each message's partition for the
 * trace (src/kafka/message-positions.ts). Named, kafkajs logs no notice about its change of default.
 */
export const PRODUCER_CONFIG: Readonly<ProducerConfig> = Object.freeze({
  idempotent: true,
  maxInFlightRequests: 1,
  allowAutoTopicCreation: false,
  createPartitioner: recordingPartitioner,
});

/**
 * The one Kafka producer of a process (idempotent, one request in flight: Kafka drops a retried
 * duplicate and keeps order), shared by the relay, the command consumers and the ops API's
 * redrive. Connected on first use. A user that saw a send fail may `reset` it: the next `get`
 * connects a fresh one (kafkajs may keep a broken connection or sequence state); a reset of a
 * producer already replaced does nothing.
 */
export interface SharedProducer {
  get(): Promise<Producer>;
  reset(failed: Producer): Promise<void>;
  /** Disconnects it: after every user has stopped. */
  close(): Promise<void>;
}

export function createSharedProducer(kafka: Kafka): SharedProducer {
  let current: Promise<Producer> | null = null;
  let connected: Producer | null = null;
  return {
    get() {
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
