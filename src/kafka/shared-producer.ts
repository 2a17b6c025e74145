import type { Kafka, Producer } from 'kafkajs';
import { recordingPartitioner } from './whole-send.js';

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
        const p = kafka.producer({
          idempotent: true,
          maxInFlightRequests: 1,
          allowAutoTopicCreation: false,
          // Records each message's partition, so that a batch can be checked whole (whole-send.ts).
          createPartitioner: recordingPartitioner,
        });
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
