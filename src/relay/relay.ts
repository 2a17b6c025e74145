import type { Kafka, Message, Producer } from 'kafkajs';
import type { Db } from '../db/prisma.js';
import { CLOUDEVENT_CONTENT_TYPE, toCloudEvent } from '../events/cloudevent.js';
import { topicName } from '../kafka/topics.js';
import { tracePublish, withTraceExtension } from '../telemetry/telemetry.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics.js';
import { toError } from '../errors.js';
import { pruneReceipts } from '../receiver/receipt-repository.js';
import { createOutboxListener } from './outbox-listener.js';
import {
  backlog,
  fetchUnpublished,
  markFailed,
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
  /** Rows per Kafka request. Default 500. */
  batchSize?: number;
  /** Fallback wake-up when no NOTIFY came (and how often a standby tries the lock). Default 1000 ms. */
  sweepMs?: number;
  /** Longest back-off after failures. Default 30000 ms. */
  maxBackoffMs?: number;
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

const PRUNE_EVERY_MS = 60_000;
const METRICS_EVERY_MS = 1_000;

export function toKafkaMessage(row: OutboxRow): Message {
  const event = toCloudEvent({
    id: row.eventId,
    source: row.source,
    type: row.type,
    subject: row.subject,
    // The row's time, so that a repeat is byte-for-byte the same event.
    time: row.createdAt,
    data: row.data,
  });
  return {
    key: row.key,
    value: JSON.stringify(withTraceExtension(event, row.headers)),
    headers: {
      ...row.headers,
      'content-type': CLOUDEVENT_CONTENT_TYPE,
      ce_id: row.eventId,
      ce_type: row.type,
    },
  };
}

export function createRelay(options: RelayOptions): Relay {
  const { db, kafka, topicPrefix } = options;
  const logger = options.logger.child({ component: 'relay' });
  const batchSize = options.batchSize ?? 500;
  const sweepMs = options.sweepMs ?? 1000;
  const maxBackoffMs = options.maxBackoffMs ?? 30_000;

  let producer: Producer | null = null;
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

  async function connectedProducer(): Promise<Producer> {
    if (producer) return producer;
    // Idempotent with one request in flight: Kafka drops a retried duplicate and keeps order.
    const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    try {
      await p.connect();
    } catch (error) {
      await p.disconnect().catch(() => undefined);
      throw error;
    }
    producer = p;
    return p;
  }

  async function resetProducer(): Promise<void> {
    const p = producer;
    producer = null;
    await p?.disconnect().catch(() => undefined);
  }

  /** Publishes one batch; returns how many rows it published. */
  async function publishBatch(): Promise<number> {
    const rows = await fetchUnpublished(db, batchSize);
    if (rows.length === 0) return 0;
    // Rows keep their id order within each topic; one request holds them all.
    const byTopic = new Map<string, Message[]>();
    const traced = tracePublish(rows);
    for (const row of rows) {
      const topic = topicName(topicPrefix, row.topic);
      const list = byTopic.get(topic) ?? [];
      list.push(traced.stamp(toKafkaMessage(row), row.eventId));
      byTopic.set(topic, list);
    }
    try {
      const p = await connectedProducer();
      await p.sendBatch({
        acks: -1,
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
    } catch (error) {
      traced.end(error);
      await markFailed(
        db,
        rows.map((r) => r.id),
        toError(error).message,
      ).catch(() => undefined);
      // A fresh producer after a failure: kafkajs may keep a broken connection or sequence state.
      await resetProducer();
      throw error;
    }
    traced.end();
    await options.afterSend?.(rows);
    await markPublished(
      db,
      rows.map((r) => r.id),
    );
    for (const row of rows) {
      metrics.relayPublished.inc({ topic: row.topic });
      logger.debug({ eventId: row.eventId, topic: row.topic, outboxId: row.id.toString() }, 'published');
    }
    logger.info(
      { count: rows.length, firstOutboxId: rows[0]!.id.toString(), lastOutboxId: rows.at(-1)!.id.toString() },
      'outbox rows published',
    );
    return rows.length;
  }

  async function housekeeping(): Promise<void> {
    const now = Date.now();
    if (now - lastMetrics >= METRICS_EVERY_MS) {
      lastMetrics = now;
      const b = await backlog(db);
      metrics.outboxBacklog.set(b.count);
      metrics.relayLagSeconds.set(b.oldest ? Math.max(0, (now - b.oldest.getTime()) / 1000) : 0);
    }
    if (now - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = now;
      const pruned = await prunePublished(db, options.retentionHours);
      // Webhook receipts (the receiver's dedupe) are kept as long as the rows they produced.
      const receipts = await pruneReceipts(db, options.retentionHours);
      if (pruned + receipts > 0) logger.info({ pruned, receipts }, 'outbox rows and webhook receipts pruned');
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
        wait = Math.min(maxBackoffMs, 200 * 2 ** Math.min(failures, 10));
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
      logger.info({ batchSize, sweepMs }, 'relay started');
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
      await resetProducer();
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
