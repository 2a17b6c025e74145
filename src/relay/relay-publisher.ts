import type { Message, Producer } from 'kafkajs';
import type { SharedProducer } from '../kafka/shared-producer.js';
import { sendWhole } from '../kafka/message-positions.js';

/**
 * What the relay sends its requests through: one topic's messages, idempotent and acks=all,
 * resolved only once Kafka acknowledged every partition they went to (kafkajs #1303), with where
 * each message landed. Two kinds: the process's shared producer on the main thread, or a producer
 * of the relay's own in a worker thread (src/relay/send-worker.ts), so that kafkajs's encoding of
 * the requests, most of a drain's CPU, does not share one event loop with reading the outbox and
 * with the rest of the process (docs/decisions/001-relay-ordering.md).
 */
export interface RelayPublisher {
  /**
   * Sends the messages within `timeoutMs` (RELAY_SEND_TIMEOUT_MS), in one request per broker; each
   * message's position in order (undefined when not known). A failure other than "too large"
   * replaces the producer before it is thrown: kafkajs may keep a broken connection or sequence state.
   */
  send(topic: string, messages: Message[], timeoutMs: number): Promise<Array<Position | undefined>>;
  /** Disconnects what the publisher owns (the shared producer is closed by its owner). */
  close(): Promise<void>;
}

export interface Position {
  partition: number;
  offset: string;
}

/** Whether Kafka refused a message (or request) as larger than it accepts: never retriable as is. */
export function isTooLarge(error: unknown): boolean {
  const seen = new Set<unknown>();
  const stack: unknown[] = [error];
  while (stack.length > 0) {
    const e = stack.pop() as
      | { type?: string; message?: string; cause?: unknown; originalError?: unknown; errors?: unknown[] }
      | undefined;
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    if (e.type === 'MESSAGE_TOO_LARGE' || e.type === 'RECORD_LIST_TOO_LARGE') return true;
    if (typeof e.message === 'string' && /larger than the max message size/i.test(e.message)) return true;
    stack.push(e.cause, e.originalError, ...(Array.isArray(e.errors) ? e.errors : []));
  }
  return false;
}

/** Rejects after `ms`: a send stuck in kafkajs's retries must not hold the flow. */
export function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no ack from Kafka within ${ms} ms (RELAY_SEND_TIMEOUT_MS)`)),
      ms,
    );
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** The relay's sends through the process's shared producer, on the main thread. */
export function sharedProducerPublisher(producer: SharedProducer, owned: boolean): RelayPublisher {
  return {
    async send(topic, messages, timeoutMs) {
      let p: Producer | undefined;
      try {
        const landed = await within(
          timeoutMs,
          (async () => {
            p = await producer.get();
            return sendWhole(p, topic, messages);
          })(),
        );
        return messages.map((m) => landed.get(m));
      } catch (error) {
        if (p && !isTooLarge(error)) await within(2000, producer.reset(p)).catch(() => undefined);
        throw error;
      }
    },
    async close() {
      if (owned) await producer.close();
    },
  };
}
