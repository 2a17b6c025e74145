import type { Kafka, Message, Producer } from 'kafkajs';
import type { Db } from '../db/prisma.js';
import { DEFAULT_MAX_BATCH_BYTES, messageBytes, toKafkaMessage } from '../outbox/outbox-message.js';
import { createSharedProducer, type SharedProducer } from '../kafka/shared-producer.js';
import { topicName } from '../kafka/topics.js';
import { messagePositions, type MessagePosition } from '../kafka/message-positions.js';
import { tracePublish } from '../telemetry/telemetry.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics.js';
import { backoffDelay } from '../backoff.js';
import { toError } from '../errors.js';
import { createOutboxListener } from './outbox-listener.js';
import { exposeRelayMetrics } from './relay-metrics.js';
import {
  backlog,
  fetchUnpublished,
  markFailed,
  markParked,
  markPublished,
  prunePublished,
  type OutboxRow,
} from './outbox-reader.js';

/**
 * The relay: publishes outbox rows to Kafka as CloudEvents, in id order, and marks them
 * published only after Kafka acknowledged them (acks=all). At least once: a crash between the
 * ack and the mark publishes the rows again, with the same CloudEvent ids. One relay publishes
 * at a time (an advisory lock, docs/decisions/001-relay-ordering.md); others stand by.
 */
export interface RelayOptions {
  db: Db;
  kafka: Kafka;
  logger: Logger;
  /** DATABASE_URL: the relay's own session for LISTEN and the publisher lock. */
  databaseUrl: string;
  /** KAFKA_TOPIC_PREFIX. */
  topicPrefix: string;
  /** Published rows older than this are deleted (OUTBOX_RETENTION_HOURS). */
  retentionHours: number;
  /** Rows read per pass. Default 500. */
  batchSize?: number;
  /**
   * Most bytes per Kafka request, and so the largest one message (RELAY_MAX_BATCH_BYTES). Keep it
   * below the broker's `message.max.bytes` (1 MiB by default). Default 900000. A row whose message
   * alone is larger, or that the broker refuses as too large, is parked.
   */
  maxBatchBytes?: number;
  /** Oldest unpublished row older than this: rentbridge_relay_stalled is 1 (RELAY_STALL_SECONDS). Default 120. */
  stallSeconds?: number;
  /** Fallback wake-up when no NOTIFY came (and how often a standby tries the lock). Default 1000 ms. */
  sweepMs?: number;
  /** Longest back-off after failures. Default 30000 ms. */
  maxBackoffMs?: number;
  /** The process's one producer (src/app/composition-root.ts). Default: one of the relay's own. */
  producer?: SharedProducer;
  /** Test hook: runs after Kafka's ack and before the rows are marked (a crash here repeats them). */
  afterSend?: (rows: OutboxRow[]) => Promise<void>;
}

export interface Relay {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Publishes until no unpublished row is left (or throws if this relay is not the publisher). */
  drain(): Promise<void>;
  /** True while this relay holds the publisher lock (the others stand by). */
  isPublisher(): boolean;
}

export { DEFAULT_MAX_BATCH_BYTES, messageBytes, toKafkaMessage };

const PRUNE_EVERY_MS = 60_000;
const METRICS_EVERY_MS = 1_000;
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

export function createRelay(options: RelayOptions): Relay {
  const { db, kafka, topicPrefix } = options;
  const logger = options.logger.child({ component: 'relay' });
  exposeRelayMetrics();
  const batchSize = options.batchSize ?? 500;
  const maxBatchBytes = options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
  /** Topic → when it may be tried again: a topic that failed waits, the others go on. */
  const topicBackoff = new Map<string, { failures: number; until: number }>();
  const sweepMs = options.sweepMs ?? 1000;
  const maxBackoffMs = options.maxBackoffMs ?? 30_000;
  /** After failure n: 400 ms doubled (ten doublings at most), capped at maxBackoffMs. */
  const failureBackoff = { initialRetryTime: 400, maxRetryTime: maxBackoffMs, maxGrowths: 9 };

  // Idempotent with one request in flight: Kafka drops a retried duplicate and keeps order.
  const producer = options.producer ?? createSharedProducer(kafka);
  let running = false;
  let loop: Promise<void> | null = null;
  let wake: (() => void) | null = null;
  let notified = false;
  let failures = 0;
  let lastPrune = 0;
  let lastMetrics = 0;

  const poke = () => {
    notified = true;
    wake?.();
  };
  const listener = createOutboxListener({
    databaseUrl: options.databaseUrl,
    logger,
    onNotify: poke,
    onLost: () => logger.warn('publisher lock lost with the session'),
  });

  function sleep(ms: number): Promise<void> {
    if (notified) {
      notified = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = null;
        notified = false;
        resolve();
      }
      wake = done;
    });
  }

  /**
   * Publishes one pass; returns how many rows it read (a full pass means more are waiting).
   * Topic by topic, each in requests of at most maxBatchBytes, marked published after each ack:
   * a topic the broker refuses waits (its rows keep their order), the other topics go on, and a
   * retry never sends again what an earlier request of the pass already delivered. Throws only
   * when the pass delivered nothing and something failed (the broker is down: back off).
   */
  async function publishBatch(): Promise<number> {
    const now = Date.now();
    const waiting = [...topicBackoff].filter(([, b]) => b.until > now).map(([t]) => t);
    const rows = await fetchUnpublished(db, batchSize, waiting);
    if (rows.length === 0) return 0;
    const byTopic = new Map<string, Array<{ row: OutboxRow; message: Message; bytes: number }>>();
    const oversized: Array<{ row: OutboxRow; bytes: number }> = [];
    for (const row of rows) {
      const message = toKafkaMessage(row);
      const bytes = messageBytes(message);
      if (bytes > maxBatchBytes) {
        oversized.push({ row, bytes });
        continue;
      }
      const list = byTopic.get(row.topic) ?? [];
      list.push({ row, message, bytes });
      byTopic.set(row.topic, list);
    }
    for (const { row, bytes } of oversized) {
      await park(
        [row],
        `CloudEvent of ${bytes} bytes is larger than RELAY_MAX_BATCH_BYTES (${maxBatchBytes})`,
      );
    }
    let published = 0;
    let firstError: unknown;
    for (const [topic, items] of byTopic) {
      try {
        let chunk: typeof items = [];
        let chunkBytes = 0;
        for (const item of items) {
          if (chunk.length > 0 && chunkBytes + item.bytes > maxBatchBytes) {
            published += await send(topic, chunk);
            chunk = [];
            chunkBytes = 0;
          }
          chunk.push(item);
          chunkBytes += item.bytes;
        }
        if (chunk.length > 0) published += await send(topic, chunk);
        topicBackoff.delete(topic);
      } catch (error) {
        firstError ??= error;
        const failures = (topicBackoff.get(topic)?.failures ?? 0) + 1;
        const wait = backoffDelay(failureBackoff, failures);
        topicBackoff.set(topic, { failures, until: Date.now() + wait });
        logger.warn(
          { err: error, topic, failures, backoffMs: wait },
          'topic not published: its rows wait, others go on',
        );
      }
    }
    if (published === 0 && oversized.length === 0 && firstError !== undefined) throw firstError;
    return rows.length;
  }

  /**
   * Sends rows of one topic in one request and marks them published. A request the broker refuses
   * as too large is split; one row it refuses alone is parked. Other errors mark the rows failed
   * and throw (the rows are retried later, in order).
   */
  async function send(
    topic: string,
    items: Array<{ row: OutboxRow; message: Message; bytes: number }>,
  ): Promise<number> {
    const rows = items.map((i) => i.row);
    const traced = tracePublish(rows);
    for (const item of items) traced.stamp(item.message, item.row.eventId);
    let p: Producer | undefined;
    let landed = new Map<Message, MessagePosition>();
    try {
      p = await producer.get();
      const topicMessages = [{ topic: topicName(topicPrefix, topic), messages: items.map((i) => i.message) }];
      landed = messagePositions(topicMessages, await p.sendBatch({ acks: -1, topicMessages }));
    } catch (error) {
      traced.end(error);
      if (isTooLarge(error)) {
        if (items.length === 1) {
          await park(rows, `the broker refused the message as too large: ${toError(error).message}`);
          return 0;
        }
        const half = Math.ceil(items.length / 2);
        return (await send(topic, items.slice(0, half))) + (await send(topic, items.slice(half)));
      }
      await markFailed(
        db,
        rows.map((r) => r.id),
        toError(error).message,
      ).catch(() => undefined);
      // A fresh producer after a failure: kafkajs may keep a broken connection or sequence state.
      if (p) await producer.reset(p);
      throw error;
    }
    traced.end();
    await options.afterSend?.(rows);
    await markPublished(
      db,
      rows.map((r) => r.id),
      new Map(items.flatMap((i) => (landed.has(i.message) ? [[i.row.id, landed.get(i.message)!]] : []))),
    );
    for (const row of rows) {
      metrics.relayPublished.inc({ topic: row.topic });
      logger.debug({ eventId: row.eventId, topic: row.topic, outboxId: row.id.toString() }, 'published');
    }
    logger.info(
      {
        topic,
        count: rows.length,
        bytes: items.reduce((n, i) => n + i.bytes, 0),
        firstOutboxId: rows[0]!.id.toString(),
        lastOutboxId: rows.at(-1)!.id.toString(),
      },
      'outbox rows published',
    );
    return rows.length;
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

  async function housekeeping(): Promise<void> {
    const now = Date.now();
    if (now - lastMetrics >= METRICS_EVERY_MS) {
      lastMetrics = now;
      const b = await backlog(db);
      metrics.outboxBacklog.set(b.count);
      metrics.outboxParked.set(b.parked);
      const lag = b.oldest ? Math.max(0, (now - b.oldest.getTime()) / 1000) : 0;
      metrics.relayLagSeconds.set(lag);
      metrics.relayStalled.set(lag > (options.stallSeconds ?? 120) ? 1 : 0);
    }
    if (now - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = now;
      const pruned = await prunePublished(db, options.retentionHours);
      // Webhook receipts are the receiver's: it prunes them (src/receiver/receipt-pruner.ts).
      if (pruned > 0) logger.info({ pruned }, 'published outbox rows pruned');
    }
  }

  async function run(): Promise<void> {
    while (running) {
      let leading = false;
      try {
        leading = await listener.tryLead();
      } catch (error) {
        logger.warn({ err: error }, 'relay cannot reach PostgreSQL: retrying');
      }
      if (!leading) {
        await sleep(sweepMs);
        continue;
      }
      let wait = sweepMs;
      try {
        // A full batch: more are waiting, go on at once. Otherwise wait for a NOTIFY or the sweep.
        if ((await publishBatch()) === batchSize) wait = 0;
        failures = 0;
      } catch (error) {
        failures += 1;
        wait = backoffDelay(failureBackoff, failures);
        logger.warn({ err: error, failures, backoffMs: wait }, 'relay pass failed: rows wait, retrying');
        // A NOTIFY must not cut the back-off short while the broker is down.
        notified = false;
      }
      // Runs during an outage too: the backlog metrics are what alerts on it.
      await housekeeping().catch((error: unknown) =>
        logger.warn({ err: error }, 'relay housekeeping failed'),
      );
      if (wait > 0) await sleep(wait);
    }
  }

  return {
    async start() {
      if (running) return;
      running = true;
      loop = run();
      logger.info({ batchSize, maxBatchBytes, sweepMs }, 'relay started');
    },
    async stop() {
      running = false;
      wake?.();
      if (loop) {
        // A pass stuck on an unreachable broker must not hold the shutdown: its rows stay unpublished.
        const stuck = new Promise<void>((resolve) => setTimeout(resolve, 10_000).unref());
        await Promise.race([loop, stuck]);
        loop = null;
      }
      await listener.close();
      // The process's shared producer is closed by its owner, after every user has stopped.
      if (!options.producer) await producer.close();
      logger.info('relay stopped');
    },
    isPublisher: () => listener.isLeader(),
    async drain() {
      if (!(await listener.tryLead())) throw new Error('another relay is the publisher');
      while ((await publishBatch()) > 0) {
        /* until empty */
      }
    },
  };
}
