import type { Kafka } from 'kafkajs';
import type { Db } from '../db/prisma.js';
import { DEFAULT_MAX_BATCH_BYTES, messageBytes, toKafkaMessage } from '../outbox/outbox-message.js';
import { createSharedProducer, type SharedProducer } from '../kafka/shared-producer.js';
import type { Logger } from '../logger.js';
import { backoffDelay } from '../backoff.js';
import { createOutboxListener } from '../outbox/outbox-listener.js';
import { prunePublished, type OutboxRow } from '../outbox/outbox-reader.js';
import { createOutboxVacuum } from '../outbox/outbox-vacuum.js';
import { createOutboxStreamReader } from '../outbox/outbox-stream-reader.js';
import { createRelayProgress, relayReadiness, type RelayStatus } from './relay-status.js';
import { runTopicStream, type RowPositions } from './topic-stream.js';
import { exposeRelayMetrics } from './relay-metrics.js';
import { createRelaySender, isTooLarge } from './relay-sender.js';
import { createRelayGauges } from './relay-gauges.js';

/**
 * The relay: publishes outbox rows to Kafka as CloudEvents, each topic in id order in a stream of
 * its own (topics in parallel: a command never waits behind another topic's backlog), and marks
 * them published only after Kafka acknowledged them (acks=all). At least once: a crash between
 * the ack and the mark publishes the rows again, with the same CloudEvent ids. One relay publishes
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
  /**
   * Most rows one read takes (RELAY_BATCH_ROWS). Reads are sized to fill about one request of
   * maxBatchBytes from the messages' average size, within this bound. Default 5000.
   */
  batchSize?: number;
  /**
   * Most bytes per Kafka request, and so the largest one message (RELAY_MAX_BATCH_BYTES). Keep it
   * below the broker's `message.max.bytes` (1 MiB by default). Default 900000. A row whose message
   * alone is larger, or that the broker refuses as too large, is parked.
   */
  maxBatchBytes?: number;
  /**
   * RELAY_STALL_SECONDS, default 120: rows wait and no send has succeeded for this long, the relay
   * "cannot publish" (its `readiness()` fails); the oldest waiting row is older, and
   * rentbridge_relay_stalled is 1.
   */
  stallSeconds?: number;
  /**
   * Wait for one request's ack (RELAY_SEND_TIMEOUT_MS) past which its rows say so: the same send
   * goes on, retried by the same producer (decision 056), never sent again beside it. Default 5000.
   */
  sendTimeoutMs?: number;
  /** How often the relay logs its progress while rows wait (backlog, rate, time left). Default 10000 ms. */
  progressEveryMs?: number;
  /** Fallback wake-up when no NOTIFY came (and how often a standby tries the lock). Default 1000 ms. */
  sweepMs?: number;
  /** Longest back-off after failures (kept short: the brokers' return is noticed within it). Default 3000 ms. */
  maxBackoffMs?: number;
  /** The process's one producer (src/app/composition-root.ts). Default: one of the relay's own. */
  producer?: SharedProducer;
  /**
   * Published rows after which a drained relay vacuums the outbox (src/outbox/outbox-vacuum.ts).
   * Default 100000.
   */
  vacuumAfterRows?: number;
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
  /** Backlog, rate, time left, last ack: measured on the relay's own schedule. */
  status(): RelayStatus;
  /** true, or why the relay cannot publish (rows wait, no ack for RELAY_STALL_SECONDS). */
  readiness(): true | string;
}

export { DEFAULT_MAX_BATCH_BYTES, isTooLarge, messageBytes, toKafkaMessage };
export type { RelayStatus };

const PRUNE_EVERY_MS = 60_000;
const METRICS_EVERY_MS = 1_000;
/** A stream that never catches up still reads from the start this often (rows committed out of order). */
const RESCAN_MS = 1_000;

export function createRelay(options: RelayOptions): Relay {
  const { db, kafka, topicPrefix } = options;
  const logger = options.logger.child({ component: 'relay' });
  exposeRelayMetrics();
  const maxRows = options.batchSize ?? 5000;
  const maxBatchBytes = options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
  const sweepMs = options.sweepMs ?? 1000;
  const maxBackoffMs = options.maxBackoffMs ?? 3000;
  const stallSeconds = options.stallSeconds ?? 120;
  const sendTimeoutMs = options.sendTimeoutMs ?? 5000;
  const progressEveryMs = options.progressEveryMs ?? 10_000;
  /** After failure n: 200 ms doubled, capped at maxBackoffMs. */
  const failureBackoff = { initialRetryTime: 200, maxRetryTime: maxBackoffMs, maxGrowths: 9 };
  /** Topic → when it may be tried again: a topic that failed waits, the others go on. */
  const topicBackoff = new Map<string, { failures: number; until: number }>();

  // Idempotent with one request in flight: Kafka drops a retried duplicate and keeps order.
  const producer = options.producer ?? createSharedProducer(kafka);
  const reader = createOutboxStreamReader({ databaseUrl: options.databaseUrl, logger });
  const progress = createRelayProgress();
  const vacuum = createOutboxVacuum({ db, logger, afterRows: options.vacuumAfterRows ?? 100_000 });
  /** The topic streams under way, by topic. */
  const streams = new Map<string, Promise<void>>();
  /** Average message size (bytes), to size reads to about one request. */
  let averageBytes = 1000;
  let running = false;
  let closed = false;
  let loop: Promise<void> | null = null;
  let wake: (() => void) | null = null;
  let notified = false;
  let lastPrune = 0;
  let measureTimer: NodeJS.Timeout | null = null;

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
  const going = () => !closed && listener.isLeader();
  const sender = createRelaySender({
    db,
    producer,
    logger,
    topicPrefix,
    maxBatchBytes,
    sendTimeoutMs,
    progress,
    afterSend: options.afterSend,
  });
  const gauges = createRelayGauges({
    db,
    logger,
    progress,
    stallSeconds,
    progressEveryMs,
    isLeader: () => listener.isLeader(),
    status: () => status(),
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

  function rowsPerRead(): number {
    // A little below the bound, so that a read rarely spills into a second, nearly empty request.
    return Math.max(1, Math.min(maxRows, Math.floor((maxBatchBytes * 0.95) / averageBytes)));
  }

  /** Marks acknowledged rows; a failure leaves them to be sent again (at least once). */
  async function mark(rows: OutboxRow[], positions: RowPositions): Promise<void> {
    await reader
      .markPublished(
        rows.map((r) => r.id),
        positions,
      )
      .then(() => vacuum.count(rows.length))
      .catch((error: unknown) => {
        logger.warn({ err: error, count: rows.length }, 'published rows not marked: they will be sent again');
      });
  }

  function stream(topic: string): Promise<void> {
    return runTopicStream({
      topic,
      reader,
      going,
      rowsPerRead,
      rescanMs: RESCAN_MS,
      send: (items, acked) => sender.send(topic, items, acked),
      mark,
      sized: (bytes, count) => {
        averageBytes = Math.max(1, averageBytes * 0.8 + (bytes / count) * 0.2);
      },
    });
  }

  function startStream(topic: string): void {
    const s = stream(topic)
      .then(
        () => {
          topicBackoff.delete(topic);
        },
        (error: unknown) => {
          const failures = (topicBackoff.get(topic)?.failures ?? 0) + 1;
          const wait = backoffDelay(failureBackoff, failures);
          topicBackoff.set(topic, { failures, until: Date.now() + wait });
          logger.warn(
            { err: error, topic, failures, backoffMs: wait },
            'topic not published: its rows wait, retrying',
          );
        },
      )
      .finally(() => {
        streams.delete(topic);
        poke();
      });
    streams.set(topic, s);
  }

  async function prune(): Promise<void> {
    const now = Date.now();
    if (now - lastPrune < PRUNE_EVERY_MS) return;
    lastPrune = now;
    const pruned = await prunePublished(db, options.retentionHours);
    // Webhook receipts are the receiver's: it prunes them (src/receiver/receipt-pruner.ts).
    if (pruned > 0) logger.info({ pruned }, 'published outbox rows pruned');
  }

  /** Starts a stream for every topic with rows waiting and none under way (and not backing off). */
  async function schedule(): Promise<void> {
    const topics = await reader.topicsWaiting();
    const now = Date.now();
    for (const topic of topics) {
      if (streams.has(topic)) continue;
      const backoff = topicBackoff.get(topic);
      if (backoff && backoff.until > now) continue;
      startStream(topic);
    }
  }

  /** Until the next sweep, or the end of the earliest back-off if sooner. */
  function nextWait(): number {
    const now = Date.now();
    let wait = sweepMs;
    for (const b of topicBackoff.values()) wait = Math.min(wait, Math.max(0, b.until - now));
    return Math.max(10, wait);
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
      try {
        await schedule();
        await prune();
        vacuum.maybeRun();
      } catch (error) {
        logger.warn({ err: error }, 'relay pass failed: rows wait, retrying');
      }
      await sleep(nextWait());
    }
  }

  function status(): RelayStatus {
    const role =
      closed || (!running && !listener.isLeader())
        ? 'stopped'
        : listener.isLeader()
          ? 'publisher'
          : 'standby';
    return progress.status(role);
  }

  return {
    async start() {
      if (running) return;
      running = true;
      closed = false;
      loop = run();
      measureTimer = setInterval(() => void gauges.measure(), METRICS_EVERY_MS);
      measureTimer.unref();
      void gauges.measure();
      logger.info({ maxRows, maxBatchBytes, sweepMs, sendTimeoutMs, stallSeconds }, 'relay started');
    },
    async stop() {
      running = false;
      closed = true;
      if (measureTimer) clearInterval(measureTimer);
      measureTimer = null;
      wake?.();
      // A stream stuck on an unreachable broker must not hold the shutdown: its rows stay unpublished.
      const stuck = new Promise<void>((resolve) => setTimeout(resolve, 10_000).unref());
      await Promise.race([Promise.allSettled([loop, ...streams.values(), vacuum.settled()]), stuck]);
      loop = null;
      await listener.close();
      await reader.close();
      // The process's shared producer is closed by its owner, after every user has stopped.
      if (!options.producer) await producer.close();
      logger.info('relay stopped');
    },
    isPublisher: () => listener.isLeader(),
    status,
    readiness: () => relayReadiness(status(), stallSeconds),
    async drain() {
      if (!(await listener.tryLead())) throw new Error('another relay is the publisher');
      for (;;) {
        const topics = await reader.topicsWaiting();
        if (topics.length === 0) return;
        // Every topic at once, as the running relay does; the first failure is thrown.
        await Promise.all(topics.map((topic) => stream(topic)));
      }
    },
  };
}
