import type { Message } from 'kafkajs';
import { withEncodedRecords } from '../kafka/encoded-record.js';
import { messageBytes, toKafkaMessage } from '../outbox/outbox-message.js';
import type { OutboxRow } from '../outbox/outbox-reader.js';
import type { OutboxStreamReader } from '../outbox/outbox-stream-reader.js';

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

/** Where each acknowledged row landed on Kafka, by outbox id (kept for the trace). */
export type RowPositions = Map<bigint, { partition: number; offset: string }>;
/** Called after each ack with the rows it covered. */
export type Acked = (rows: OutboxRow[], positions: RowPositions) => void;

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
  send: (items: StreamItem[], acked: Acked) => Promise<void>;
  /** Marks rows published (with where they landed); a failure leaves them to be sent again. */
  mark: (rows: OutboxRow[], positions: RowPositions) => Promise<void>;
  /** Called with every message's size, to size the reads. */
  sized?: (bytes: number, count: number) => void;
}

/** Reads a stream keeps ahead of its sends (each at most about one request). */
const READ_AHEAD = 3;

interface Read {
  items: StreamItem[];
  /** Whether the scan goes on after this read (it was full and the rescan time has not come). */
  more: boolean;
}

export async function runTopicStream(options: TopicStreamOptions): Promise<void> {
  const marking = new Set<Promise<void>>();
  const settle = async () => {
    while (marking.size > 0) await Promise.allSettled([...marking]);
  };
  const acked: Acked = (rows, positions) => {
    const marked = options.mark(rows, positions);
    marking.add(marked);
    void marked.finally(() => marking.delete(marked));
  };
  try {
    // A scan that found rows is followed by one from the start, once its marks are in (rows
    // committed out of id order); the stream ends when a scan from the start finds nothing.
    while (options.going() && (await scan(options, acked))) await settle();
  } finally {
    await settle();
  }
}

/**
 * One scan of a topic from its first unpublished row: reads run up to READ_AHEAD ahead of the
 * sends, one after the other (keyset: each starts after the last id of the one before), so a
 * read's latency hides behind the sends instead of adding to them. Returns whether it found rows.
 */
async function scan(options: TopicStreamOptions, acked: Acked): Promise<boolean> {
  const { topic, reader } = options;
  const rescanAt = Date.now() + options.rescanMs;
  let stopped = false;
  const read = async (after: bigint): Promise<Read> => {
    const asked = options.rowsPerRead();
    const rows = await reader.fetch(topic, after, asked);
    let bytes = 0;
    // Their records encoded here (one buffer for the read), while the request before waits for its ack.
    const messages = withEncodedRecords(rows.map(toKafkaMessage));
    const items = rows.map((row, i) => {
      const message = messages[i]!;
      const size = messageBytes(message);
      bytes += size;
      return { row, message, bytes: size };
    });
    if (items.length > 0) options.sized?.(bytes, items.length);
    return { items, more: items.length >= asked && Date.now() < rescanAt };
  };
  const ahead: Array<Promise<Read>> = [read(0n)];
  const topUp = () => {
    while (ahead.length < READ_AHEAD) {
      const next = ahead
        .at(-1)!
        .then((r) =>
          r.more && !stopped && options.going() ? read(r.items.at(-1)!.row.id) : { items: [], more: false },
        );
      next.catch(() => undefined); // awaited in turn below; a failure is thrown there
      ahead.push(next);
    }
  };
  let found = false;
  try {
    for (;;) {
      topUp();
      const { items, more } = await ahead.shift()!;
      if (items.length > 0) {
        found = true;
        await options.send(items, acked);
      }
      if (!more || !options.going()) return found;
    }
  } finally {
    stopped = true;
  }
}
