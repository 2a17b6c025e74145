import type { Message } from 'kafkajs';
import { messageBytes, toKafkaMessage } from '../outbox/outbox-message.js';
import type { OutboxRow } from './outbox-reader.js';
import type { OutboxStreamReader } from './outbox-stream-reader.js';

/**
 * One topic's rows on their way to Kafka, pipelined: while one request waits for its ack, the next
 * rows are read and built, and the rows already acknowledged are marked (one statement each
 * batch). Requests of a topic go one after the other, so the order per key holds; nothing is
 * marked before its ack. Ids are read by keyset (id > the last one taken); when the stream catches
 * up (a short read), it waits for its marks and reads again from the start, so that a row
 * committed out of id order is found too. The stream ends when the topic has nothing left.
 */
export interface StreamItem {
  row: OutboxRow;
  message: Message;
  bytes: number;
}

export interface TopicStreamOptions {
  topic: string;
  reader: OutboxStreamReader;
  /** Whether to go on (the relay runs and still holds the publisher lock). */
  going: () => boolean;
  /** Most rows one read takes: sized so one read fills about one request (see `rowsPerRead`). */
  rowsPerRead: () => number;
  /** How often, at the latest, a stream that never catches up reads from the start again. */
  rescanMs: number;
  /** Sends one topic's rows (in requests of at most the byte bound); calls `acked` after each ack. */
  send: (items: StreamItem[], acked: (rows: OutboxRow[]) => void) => Promise<void>;
  /** Marks rows published; a failure leaves them to be sent again (at least once). */
  mark: (rows: OutboxRow[]) => Promise<void>;
  /** Called with every message's size, to size the reads. */
  sized?: (bytes: number, count: number) => void;
}

export async function runTopicStream(options: TopicStreamOptions): Promise<void> {
  const { topic, reader } = options;
  const marking = new Set<Promise<void>>();
  const read = async (after: bigint): Promise<{ items: StreamItem[]; asked: number }> => {
    const asked = options.rowsPerRead();
    const rows = await reader.fetch(topic, after, asked);
    let bytes = 0;
    const items = rows.map((row) => {
      const message = toKafkaMessage(row);
      const size = messageBytes(message);
      bytes += size;
      return { row, message, bytes: size };
    });
    if (items.length > 0) options.sized?.(bytes, items.length);
    return { items, asked };
  };
  const settle = async () => {
    while (marking.size > 0) await Promise.allSettled([...marking]);
  };

  let fromStart = true;
  let rescanAt = Date.now() + options.rescanMs;
  let next: Promise<{ items: StreamItem[]; asked: number }> | null = read(0n);
  try {
    while (next && options.going()) {
      const { items, asked } = await next;
      next = null;
      if (items.length === 0) {
        if (fromStart) return;
        // Caught up: once the marks are in, read from the start (rows committed out of id order).
        await settle();
        fromStart = true;
        rescanAt = Date.now() + options.rescanMs;
        next = read(0n);
        continue;
      }
      fromStart = false;
      const after = items.at(-1)!.row.id;
      const more = items.length >= asked && Date.now() < rescanAt;
      // The next rows are read and built while this request waits for its ack.
      if (more) {
        next = read(after);
        next.catch(() => undefined);
      }
      await options.send(items, (rows) => {
        const marked = options.mark(rows);
        marking.add(marked);
        void marked.finally(() => marking.delete(marked));
      });
      if (!more) {
        await settle();
        fromStart = true;
        rescanAt = Date.now() + options.rescanMs;
        next = read(0n);
      }
    }
  } finally {
    await settle();
  }
}
