import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { Db } from '../db/prisma.js';
import { commitStored } from '../kafka/commit-stored.js';
import { watchConsumer, type ConsumerHealth, type WatchedConsumer } from '../kafka/consumer-health.js';
import { callbackWebhookId } from '../contracts/outcomes.js';
import { OUTCOME_TOPICS, topicName } from '../kafka/topics.js';
import type { Logger } from '../logger.js';
import { insertDeliveries, type NewDelivery } from './callback-repository.js';

export interface CallbackIntakeOptions {
  db: Db;
  kafka: Kafka;
  logger: Logger;
  topicPrefix: string;
  /** The sources with a PMS_CALLBACKS entry: only their outcomes become deliveries. */
  sources: readonly string[];
  /** Outcomes older than this (the retry span) are not delivered: they would be dead at once. */
  maxAgeMs: number;
  /** Called with the sources that got new deliveries (their loops wake at once). */
  onNew(sources: ReadonlySet<string>): void;
  /** Consumer group; default `<prefix>rentbridge.callbacks`. */
  groupId?: string;
}

export interface CallbackIntake {
  readonly groupId: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  health(): ConsumerHealth;
}

function header(message: KafkaMessage, name: string): string | undefined {
  const value = message.headers?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.toString();
}

/**
 * The delivery an outcome message makes, or null: not an outcome of a source with callbacks, or
 * not readable (the outcome topics' contract is rentbridge's own: an unreadable one is skipped, never
 * a poison pill for callbacks), or older than `maxAgeMs`.
 *
 * The webhook-id is the outcome's CloudEvent id, which names the command and its result (decision
 * 041): a republished outcome is the same delivery, while a command redriven from `unverified` to
 * `applied` is a new one the PMS must not dedupe away.
 */
export function deliveryOf(
  message: KafkaMessage,
  sources: ReadonlySet<string>,
  maxAgeMs: number,
  now = Date.now(),
): NewDelivery | null {
  const headerSource = header(message, 'command-source');
  if (headerSource !== undefined && !sources.has(headerSource)) return null;
  if (!message.value) return null;
  let event: {
    id?: unknown;
    type?: unknown;
    time?: unknown;
    data?: { command_source?: unknown; command_type?: unknown; command_id?: unknown; status?: unknown };
  };
  try {
    event = JSON.parse(message.value.toString()) as typeof event;
  } catch {
    return null;
  }
  const data = event.data;
  const source = data?.command_source;
  if (
    typeof event.id !== 'string' ||
    typeof event.type !== 'string' ||
    typeof source !== 'string' ||
    !sources.has(source) ||
    typeof data?.command_type !== 'string' ||
    typeof data.command_id !== 'string' ||
    typeof data.status !== 'string'
  ) {
    return null;
  }
  const time = typeof event.time === 'string' ? Date.parse(event.time) : Number.NaN;
  if (Number.isFinite(time) && now - time > maxAgeMs) return null;
  return {
    source,
    webhookId: callbackWebhookId(event.id, data.status),
    eventId: event.id,
    eventType: event.type,
    commandType: data.command_type,
    commandId: data.command_id,
    outcomeStatus: data.status,
    payload: message.value.toString(),
  };
}

/**
 * Reads outcomes.* in its own consumer group (never the command consumers': a slow endpoint does
 * not delay a command) and turns each outcome of a source with callbacks into a delivery row. The
 * offset is committed only after the rows are written, and a delivery is unique per (source,
 * webhook-id): a crash or replay re-reads a few outcomes, harmlessly.
 */
export function createCallbackIntake(options: CallbackIntakeOptions): CallbackIntake {
  const log = options.logger.child({ component: 'callback-intake' });
  const groupId = options.groupId ?? `${options.topicPrefix}rentbridge.callbacks`;
  const sources = new Set(options.sources);
  const topics = OUTCOME_TOPICS.map((t) => topicName(options.topicPrefix, t));
  let consumer: Consumer | undefined;
  let health: WatchedConsumer | undefined;

  return {
    groupId,
    health() {
      if (!health) throw new Error('the callback intake is not started');
      return health;
    },
    async start() {
      // A stop waits for the fetch in flight: 1 s instead of kafkajs's 5 s long poll.
      consumer = options.kafka.consumer({ groupId, maxWaitTimeInMs: 1000 });
      const watched = watchConsumer(consumer, { groupId, topics: () => topics, readyWhileJoining: true });
      health = watched;
      await consumer.connect();
      // From the beginning on a group's first start: no outcome published before it is missed.
      await consumer.subscribe({ topics, fromBeginning: true });
      const c = consumer;
      // Not awaited, as the command consumers: the first join after a crash waits out the dead
      // member's session while the process serves (readyWhileJoining).
      watched.joining();
      const running = consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch, heartbeat }) => {
          const rows = batch.messages.flatMap((m) => deliveryOf(m, sources, options.maxAgeMs) ?? []);
          const created = await insertDeliveries(options.db, rows);
          if (created.length > 0) {
            log.debug(
              { topic: batch.topic, partition: batch.partition, created: created.length },
              'callbacks queued',
            );
            options.onNew(new Set(created.map((d) => d.source)));
          }
          const last = batch.messages.at(-1);
          if (last) {
            const offset = String(BigInt(last.offset) + 1n);
            // Its rows are in (ON CONFLICT DO NOTHING): a refused commit does not fail the batch.
            await commitStored(c, [{ topic: batch.topic, partition: batch.partition, offset }], log);
          }
          await heartbeat();
        },
      });
      void running.then(
        () => log.info({ groupId }, 'callback intake in its group'),
        (error: unknown) => {
          log.error({ err: error }, 'callback intake did not start');
          watched.fail(error instanceof Error ? error.message : String(error));
        },
      );
      log.info({ groupId, sources: [...sources] }, 'callback intake started (joining its group)');
    },
    async stop() {
      await consumer?.disconnect();
      consumer = undefined;
    },
  };
}
