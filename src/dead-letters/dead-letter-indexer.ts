import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import { commandContracts } from '../contracts/command-contracts.js';
import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import { commitStored } from '../kafka/commit-stored.js';
import { watchConsumer, type ConsumerHealth, type WatchedConsumer } from '../kafka/consumer-health.js';
import { TOPICS, topicName } from '../kafka/topics.js';
import { exposeMetrics, metrics, startAtZero, topicLabel } from '../metrics.js';
import { traceIndexing } from '../telemetry.js';
import { DEAD_LETTER_REASONS, fromDeadLetterHeaders } from './dead-letter-headers.js';
import { insertDeadLetters } from './dead-letter-repository.js';

/** Rows per INSERT. */
const CHUNK = 500;

/** The command topics whose dead letters rentbridge writes: one per entry of the list of command types. */
const COMMAND_TOPICS = commandContracts().map((c) => c.topic);

export interface DeadLetterIndexerOptions {
  db: Db;
  kafka: Kafka;
  logger: Logger;
  /** KAFKA_TOPIC_PREFIX: every `<prefix>….dlq` topic is read. */
  topicPrefix: string;
  /** Consumer group; default `<prefix>rentbridge.dead-letter-indexer`. */
  groupId?: string;
}

export interface DeadLetterIndexer {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** In its group, not crash-looping, its lag on the known DLQ topics: for /readyz. */
  health(): ConsumerHealth;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Matches every DLQ topic under the prefix. */
export function dlqTopicPattern(topicPrefix: string): RegExp {
  return new RegExp(`^${escapeRegExp(topicPrefix)}.+\\.dlq$`);
}

/**
 * Reads every `*.dlq` topic into `dead_letters`, keeping the value and every header. The offset
 * is committed only after the row is written, and a row is unique per (topic, partition, offset),
 * so a crash or a rebalance re-reads at most a few letters, harmlessly.
 *
 * It counts in `deadLettersIndexed`, not `deadLetters`: the consumers count the dead-lettering
 * itself, and both may run in one process (`rentbridge start`).
 *
 * kafkajs resolves a regex subscription when the consumer starts: DLQ topics created later are
 * read after the next restart (the known ones exist from `ensureTopics()`).
 */
export function createDeadLetterIndexer(options: DeadLetterIndexerOptions): DeadLetterIndexer {
  const log = options.logger.child({ component: 'dead-letter-indexer' });
  const groupId = options.groupId ?? `${options.topicPrefix}rentbridge.dead-letter-indexer`;
  let consumer: Consumer | undefined;
  let health: WatchedConsumer | undefined;
  exposeMetrics('deadLetterIndex');
  // The letters of every command topic, by every reason, from 0 (src/metrics.ts).
  startAtZero(metrics.deadLettersIndexed, { topic: COMMAND_TOPICS, reason: DEAD_LETTER_REASONS });

  /** One multi-row INSERT of the letters, then one commit of the offset after the last. */
  async function indexChunk(topic: string, partition: number, chunk: KafkaMessage[]): Promise<void> {
    const created = await insertDeadLetters(
      options.db,
      chunk.map((message) => {
        const parsed = fromDeadLetterHeaders(message.headers);
        return {
          dlqTopic: topic,
          partition,
          offset: message.offset,
          key: message.key?.toString() ?? null,
          value: message.value?.toString() ?? '',
          headers: parsed.all,
          info: parsed,
        };
      }),
    );
    for (const row of created) {
      metrics.deadLettersIndexed.inc({
        // The logical topic, as every topic label (src/metrics.ts).
        topic: topicLabel(options.topicPrefix, row.originalTopic ?? row.dlqTopic),
        reason: row.reason ?? 'unknown',
      });
    }
    const last = chunk.at(-1)!;
    log.info(
      {
        topic,
        partition,
        fromOffset: chunk[0]!.offset,
        toOffset: last.offset,
        created: created.length,
      },
      'dead letters indexed',
    );
    // Stored with skipDuplicates: a refused commit does not fail the batch.
    if (consumer)
      await commitStored(consumer, [{ topic, partition, offset: String(BigInt(last.offset) + 1n) }], log);
  }

  return {
    health() {
      if (!health) throw new Error('the dead-letter indexer is not started');
      return health;
    },
    async start() {
      // A stop waits for the fetch in flight: 1 s instead of kafkajs's 5 s long poll.
      consumer = options.kafka.consumer({ groupId, maxWaitTimeInMs: 1000 });
      const watched = watchConsumer(consumer, {
        groupId,
        // Indexing is ops' search, not the serving path: it catches up after readiness.
        readyWhileJoining: true,
        // The DLQ topics rentbridge creates; kafkajs reads the pattern's matches at start.
        topics: () => COMMAND_TOPICS.map((t) => topicName(options.topicPrefix, TOPICS.dlq(t))),
      });
      health = watched;
      try {
        await consumer.connect();
        await consumer.subscribe({ topics: [dlqTopicPattern(options.topicPrefix)], fromBeginning: true });
      } catch (error) {
        // Started while Kafka is away: the next start makes a consumer of its own.
        await consumer.disconnect().catch(() => undefined);
        throw error;
      }
      // Not awaited: kafkajs's run() returns once the consumer is in its group, which after a crash
      // waits for the broker to drop the dead process's member (its session timeout). The process
      // is ready meanwhile (readyWhileJoining); a failed join is a crash the health check sees.
      watched.joining();
      const running = consumer.run({
        autoCommit: false,
        // Chunk by chunk (indexChunk): one INSERT, then one offset commit each.
        eachBatch: async ({ batch, heartbeat, isRunning, isStale }) => {
          const { topic, partition } = batch;
          for (let i = 0; i < batch.messages.length && isRunning() && !isStale(); i += CHUNK) {
            const chunk = batch.messages.slice(i, i + CHUNK);
            const traced = traceIndexing(topic, chunk);
            await indexChunk(topic, partition, chunk).catch((error: unknown) => {
              traced.end(error);
              throw error;
            });
            traced.end();
            await heartbeat();
          }
        },
      });
      void running.then(
        () => log.info({ groupId }, 'dead-letter indexer in its group'),
        (error: unknown) => log.error({ err: error }, 'dead-letter indexer did not start'),
      );
      log.info({ groupId }, 'dead-letter indexer started (joining its group)');
    },
    async stop() {
      await consumer?.disconnect();
      consumer = undefined;
    },
  };
}
