import type { Message, Producer } from 'kafkajs';
import type { Db } from '../db/prisma.js';
import {
  type SharedProducer,
  sendWhole,
  type MessagePosition,
  producerSessionLost,
} from '../kafka/shared-producer.js';
import { topicName } from '../kafka/topics.js';
import { withEncodedRecords } from '../kafka/encoded-record.js';
import { telemetryEnabled, tracePublish } from '../telemetry.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics.js';
import { toError } from '../errors.js';
import { markFailed, markParked, type OutboxRow } from '../outbox/outbox-reader.js';
import type { RelayProgress } from './relay-status.js';
import type { Acked, StreamItem } from './topic-stream.js';

/**
 * The relay's sends: one topic's rows in requests of at most maxBatchBytes, one after the other,
 * each checked whole (kafkajs #1303); one without an ack within RELAY_SEND_TIMEOUT_MS says so on its
 * rows and is waited for still; rows Kafka can never take are parked.
 */
export interface RelaySenderOptions {
  db: Db;
  producer: SharedProducer;
  logger: Logger;
  topicPrefix: string;
  maxBatchBytes: number;
  sendTimeoutMs: number;
  progress: RelayProgress;
  afterSend?: (rows: OutboxRow[]) => Promise<void>;
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

/** Rejects after `ms` (the promise itself goes on: a caller that stops waiting does not cancel it). */
export function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SendTimeoutError(ms)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** No ack within RELAY_SEND_TIMEOUT_MS: said on the rows, while the same send goes on. */
export class SendTimeoutError extends Error {
  constructor(readonly ms: number) {
    super(`no ack from Kafka within ${ms} ms (RELAY_SEND_TIMEOUT_MS): still waiting for the same send`);
    this.name = 'SendTimeoutError';
  }
}

export function createRelaySender(options: RelaySenderOptions): {
  send(topic: string, items: StreamItem[], acked: Acked): Promise<void>;
} {
  const { db, producer, logger, topicPrefix, maxBatchBytes, sendTimeoutMs, progress } = options;

  /** Sends one topic's rows in requests of at most maxBatchBytes, one after the other. */
  async function send(topic: string, items: StreamItem[], acked: Acked): Promise<void> {
    let chunk: StreamItem[] = [];
    let chunkBytes = 0;
    for (const item of items) {
      if (item.bytes > maxBatchBytes) {
        await park(
          [item.row],
          `CloudEvent of ${item.bytes} bytes is larger than RELAY_MAX_BATCH_BYTES (${maxBatchBytes})`,
        );
        continue;
      }
      if (chunk.length > 0 && chunkBytes + item.bytes > maxBatchBytes) {
        await sendRequest(topic, chunk, acked);
        chunk = [];
        chunkBytes = 0;
      }
      chunk.push(item);
      chunkBytes += item.bytes;
    }
    if (chunk.length > 0) await sendRequest(topic, chunk, acked);
  }

  /**
   * One request and its ack. A request the broker refuses as too large is split; one row it
   * refuses alone is parked. A send with no ack within sendTimeoutMs is not given up: its rows say
   * so (last_error) and the relay goes on waiting for the SAME send, which kafkajs retries with the
   * same producer id and sequence numbers until the broker answers (decision 056): a second send
   * of the rows, or a new producer, would write them twice when the first was written but its ack
   * lost. Other errors mark the rows failed and throw: the topic backs off and its rows are sent
   * again, in order, by the same producer (a producer is replaced only when the broker no longer
   * knows its session).
   */
  async function sendRequest(topic: string, items: StreamItem[], acked: Acked): Promise<void> {
    const rows = items.map((i) => i.row);
    const traced = tracePublish(rows);
    for (const item of items) traced.stamp(item.message, item.row.eventId);
    // Encoded when read (src/relay/topic-stream.ts); again with the trace context just stamped.
    if (telemetryEnabled()) withEncodedRecords(items.map((i) => i.message));
    let p: Producer | undefined;
    let landed = new Map<Message, MessagePosition>();
    const sending = (async () => {
      p = await producer.get();
      const messages = items.map((i) => i.message);
      // Resolves only when every partition of the batch was acknowledged (kafkajs #1303).
      landed = await sendWhole(p, topicName(topicPrefix, topic), messages);
    })();
    try {
      try {
        await within(sendTimeoutMs, sending);
      } catch (error) {
        if (!(error instanceof SendTimeoutError)) throw error;
        logger.warn({ topic, count: rows.length, waitedMs: sendTimeoutMs }, error.message);
        await markFailed(
          db,
          rows.map((r) => r.id),
          error.message,
        ).catch(() => undefined);
        await sending;
      }
    } catch (error) {
      traced.end(error);
      if (isTooLarge(error)) {
        if (items.length === 1) {
          await park(rows, `the broker refused the message as too large: ${toError(error).message}`);
          return;
        }
        const half = Math.ceil(items.length / 2);
        await sendRequest(topic, items.slice(0, half), acked);
        await sendRequest(topic, items.slice(half), acked);
        return;
      }
      await markFailed(
        db,
        rows.map((r) => r.id),
        toError(error).message,
      ).catch(() => undefined);
      if (p && producerSessionLost(error)) await within(2000, producer.reset(p)).catch(() => undefined);
      throw error;
    }
    traced.end();
    await options.afterSend?.(rows);
    progress.acked(rows.length);
    metrics.relayPublished.inc({ topic }, rows.length);
    logger.debug(
      {
        topic,
        count: rows.length,
        firstOutboxId: rows[0]!.id.toString(),
        lastOutboxId: rows.at(-1)!.id.toString(),
      },
      'outbox rows published',
    );
    // Where each row landed (topic, partition, offset), kept with its mark for the trace.
    const positions = new Map<bigint, { partition: number; offset: string }>();
    for (const item of items) {
      const at = landed.get(item.message);
      if (at) positions.set(item.row.id, at);
    }
    acked(rows, positions);
  }

  /** A row that can never be published: kept with its reason, never blocking the rows behind it. */
  async function park(rows: OutboxRow[], reason: string): Promise<void> {
    await markParked(
      db,
      rows.map((r) => r.id),
      reason,
    );
    for (const row of rows) {
      metrics.relayParked.inc({ topic: row.topic });
      logger.error(
        { eventId: row.eventId, topic: row.topic, outboxId: row.id.toString(), reason },
        'outbox row parked: it can never be published',
      );
    }
  }

  return { send };
}
