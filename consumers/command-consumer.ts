import { setTimeout as sleep } from 'node:timers/promises';
import type { Consumer, IHeaders, Kafka, KafkaMessage, Producer, TopicMessages } from 'kafkajs';
import type { ZodType } from 'zod';
import type { Db } from '../src/db/prisma.js';
import {
  DEAD_LETTER_REASONS,
  REDRIVE_HEADER,
  toDeadLetterHeaders,
  type DeadLetterReason,
} from '../src/dead-letters/dead-letter-headers.js';
import { CLOUDEVENT_CONTENT_TYPE, parseCloudEvent, toCloudEvent } from '../src/events/cloudevent.js';
import { isSuccess, OUTCOME_TYPES, type CommandKind, type CommandOutcome } from '../src/events/outcomes.js';
import {
  createCommandLocks,
  createCommandRepository,
  GuardBusyError,
  createThrottleGate,
  guardedWrite,
  type CommandRecord,
  type GuardOptions,
  type GuardPartner,
  createSnapshotPageCache,
  type ReadBackStrategy,
  type SnapshotPageCache,
} from '../src/guard/index.js';
import { TOPICS, topicName } from '../src/kafka/topics.js';
import type { Logger } from '../src/logger.js';
import { metrics } from '../src/metrics.js';
import { traceCommand, traceOutcome } from '../src/telemetry/telemetry.js';

/**
 * The runner shared by both command consumers: one Kafka consumer per command topic, messages of
 * one partition in order (they are keyed by the target record, so one record's commands run in
 * sequence), partitions in parallel. Each command goes through the guarded write; then its
 * outcome (and, unless it succeeded, a dead letter) is published, and only then is the offset
 * committed. A crash in between redelivers the message; the guard finds it final and publishes
 * the outcome again without writing.
 */

/** What differs between the command topics. */
export interface CommandSpec<C> {
  /** The CLI name: `rentbridge consumer <name>`; the consumer group is `rentbridge.<name>`. */
  name: string;
  kind: CommandKind;
  /** Logical topics (without KAFKA_TOPIC_PREFIX). */
  topic: string;
  outcomeTopic: string;
  /** The CloudEvent `type` commands on the topic carry. */
  eventType: string;
  schema: ZodType<C>;
  commandId(command: C): string;
  targetId(command: C): string;
  readBack(partner: GuardPartner, options: { snapshotCache?: SnapshotPageCache }): ReadBackStrategy<C>;
}

export interface CommandConsumerDeps {
  kafka: Kafka;
  db: Db;
  /**
   * DATABASE_URL: the guard's per-command locks hold connections of their own (one per partition
   * consumed concurrently, on top of the Prisma pool).
   */
  databaseUrl: string;
  partner: GuardPartner;
  logger: Logger;
  /** KAFKA_TOPIC_PREFIX. */
  topicPrefix: string;
  /** The shared rate budget: a 429 pauses every process sharing it. */
  budget?: { pauseUntil(until: Date): Promise<void> };
  /** Default `<topicPrefix>rentbridge.<name>`. */
  groupId?: string;
  /** Partitions processed at once. Default 3. */
  partitionsConsumedConcurrently?: number;
  /** Kafka session time-out: how soon a dead member's partitions move on. Default kafkajs's 30 s. */
  sessionTimeoutMs?: number;
  guard?: GuardOptions;
  /**
   * How long a list page read for one command's snapshot serves the snapshots of others (see
   * src/guard/snapshot-page-cache.ts). Default 1000 ms; 0 reads a page per snapshot.
   */
  snapshotPageTtlMs?: number;
}

export interface CommandConsumer {
  readonly groupId: string;
  start(): Promise<void>;
  /** Finishes the command in hand, then leaves the group. */
  stop(): Promise<void>;
}

/** Source of the outcomes and dead letters this consumer publishes. */
const SOURCE = (name: string) => `/consumers/${name}`;

function headerValue(headers: IHeaders | undefined, name: string): string | undefined {
  const v = headers?.[name];
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined ? undefined : one.toString();
}

/** Best effort: the command id of a message that failed its schema, for the dead letter. */
function looseCommandId(value: Buffer | null): string | null {
  try {
    const data = (JSON.parse(value?.toString() ?? '') as { data?: Record<string, unknown> }).data;
    const id = data?.decision_id ?? data?.payment_id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

export function toOutcome(kind: CommandKind, record: CommandRecord): CommandOutcome {
  const status = record.state as CommandOutcome['status'];
  return {
    command_id: record.commandId,
    command_type: kind,
    target_id: record.targetId,
    status,
    attempts: record.attempts,
    partner_request_ids: record.requestIds,
    ...(!isSuccess(status) && record.lastError
      ? {
          error: {
            code: record.lastError.code,
            status: record.lastError.status,
            message: record.lastError.message,
          },
        }
      : {}),
  };
}

export function createCommandConsumer<C>(spec: CommandSpec<C>, deps: CommandConsumerDeps): CommandConsumer {
  // The prefix namespaces the group too: two deployments (or test runs) on one cluster never share offsets.
  const groupId = deps.groupId ?? `${deps.topicPrefix}rentbridge.${spec.name}`;
  const topic = topicName(deps.topicPrefix, spec.topic);
  const outcomeTopic = topicName(deps.topicPrefix, spec.outcomeTopic);
  const dlqTopic = topicName(deps.topicPrefix, TOPICS.dlq(spec.topic));
  const logger = deps.logger.child({ component: 'consumer', consumer: spec.name, topic });
  const repository = createCommandRepository(deps.db);
  const concurrency = deps.partitionsConsumedConcurrently ?? 3;
  // eachMessage handles one command per partition at a time; twice that many connections, so an
  // unlock still on its way never delays the partition's next command.
  const locks = createCommandLocks({ databaseUrl: deps.databaseUrl, logger, max: 2 * concurrency });
  const ttlMs = deps.snapshotPageTtlMs ?? 1000;
  const strategy = spec.readBack(
    deps.partner,
    ttlMs > 0 ? { snapshotCache: createSnapshotPageCache({ ttlMs }) } : {},
  );
  const stopping = new AbortController();

  const consumer: Consumer = deps.kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    ...(deps.sessionTimeoutMs && { sessionTimeout: deps.sessionTimeoutMs, heartbeatInterval: 1000 }),
  });
  const producer: Producer = deps.kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
  });
  const gate = createThrottleGate({
    onPause: async (until) => {
      logger.warn({ until: until.toISOString() }, 'throttled: pausing the consumer');
      consumer.pause([{ topic }]);
      await deps.budget?.pauseUntil(until);
    },
    onResume: () => {
      logger.info('resuming after throttle');
      consumer.resume([{ topic }]);
    },
  });

  interface Origin {
    partition: number;
    message: KafkaMessage;
  }

  function deadLetter(
    origin: Origin,
    reason: DeadLetterReason,
    info: {
      commandId: string | null;
      error: { code: string | null; status: number | null; message: string } | null;
      attempts: number;
      firstFailureAt: Date;
      lastFailureAt: Date;
      partnerRequestIds: string[];
    },
  ): TopicMessages {
    const headers = toDeadLetterHeaders({
      originalTopic: topic,
      originalPartition: origin.partition,
      originalOffset: origin.message.offset,
      originalKey: origin.message.key?.toString() ?? null,
      reason,
      errorCode: info.error?.code ?? null,
      errorStatus: info.error?.status ?? null,
      errorMessage: info.error?.message ?? null,
      attempts: info.attempts,
      firstFailureAt: info.firstFailureAt,
      lastFailureAt: info.lastFailureAt,
      partnerRequestIds: info.partnerRequestIds,
      consumerGroup: groupId,
      commandId: info.commandId,
    });
    return {
      topic: dlqTopic,
      messages: [{ key: origin.message.key, value: origin.message.value, headers }],
    };
  }

  async function publishResult(origin: Origin, record: CommandRecord, redelivered: boolean) {
    const outcome = toOutcome(spec.kind, record);
    const event = toCloudEvent({
      // Stable per command: a republished outcome carries the same id.
      id: `outcome.${record.commandId}`,
      source: SOURCE(spec.name),
      type: OUTCOME_TYPES[spec.kind],
      subject: record.targetId,
      data: outcome,
    });
    const batches: TopicMessages[] = [
      {
        topic: outcomeTopic,
        messages: [
          {
            key: record.targetId,
            value: JSON.stringify(event),
            headers: { 'content-type': CLOUDEVENT_CONTENT_TYPE, 'command-id': record.commandId },
          },
        ],
      },
    ];
    const reason = DEAD_LETTER_REASONS.find((r) => r === record.state);
    // A redriven command that is final again is not dead-lettered again (no redrive loop); a
    // plain redelivery is, because the first dead letter may not have reached Kafka.
    const redriven = headerValue(origin.message.headers, REDRIVE_HEADER.redrivenFrom) !== undefined;
    if (reason && !(redelivered && redriven)) {
      const failedAt = (iso: string | undefined) => (iso ? new Date(iso) : (record.finishedAt ?? new Date()));
      batches.unshift(
        deadLetter(origin, reason, {
          commandId: record.commandId,
          error: record.lastError,
          attempts: record.attempts,
          firstFailureAt: failedAt(record.lastError?.first_failure_at),
          lastFailureAt: failedAt(record.lastError?.last_failure_at),
          partnerRequestIds: record.requestIds,
        }),
      );
      metrics.deadLetters.inc({ topic: spec.topic, reason });
    }
    await traceOutcome(record.commandId, record.state, () =>
      producer.sendBatch({ topicMessages: batches, acks: -1 }),
    );
  }

  async function handle(origin: Origin, log: Logger): Promise<void> {
    let command: C;
    let eventId: string;
    try {
      const event = parseCloudEvent(origin.message.value);
      eventId = event.id;
      if (event.type !== spec.eventType) {
        throw new TypeError(`CloudEvent type "${event.type}" is not "${spec.eventType}"`);
      }
      command = spec.schema.parse(event.data);
    } catch (error) {
      // Never retried: the same bytes fail the same way (no crash loop on a poison message).
      log.warn({ err: error }, 'invalid message: dead-lettered');
      const now = new Date();
      const batch = deadLetter(origin, 'invalid_message', {
        commandId: looseCommandId(origin.message.value),
        error: { code: 'invalid_message', status: null, message: (error as Error).message ?? String(error) },
        attempts: 0,
        firstFailureAt: now,
        lastFailureAt: now,
        partnerRequestIds: [],
      });
      await producer.sendBatch({ topicMessages: [batch], acks: -1 });
      metrics.deadLetters.inc({ topic: spec.topic, reason: 'invalid_message' });
      return;
    }

    const commandId = spec.commandId(command);
    // The CloudEvent id ties this command to its webhook and outbox row; the command id to its
    // Partner API attempts (request ids `<commandId>.a<n>`), outcome and dead letter.
    const clog = log.child({ commandId, eventId });
    for (let attempt = 1; ; attempt++) {
      try {
        const { record, alreadyFinal, settled } = await guardedWrite(
          {
            repository,
            locks,
            strategy,
            logger: log, // the guard adds commandId itself
            throttle: gate,
            signal: stopping.signal,
            ...(deps.guard && { options: deps.guard }),
          },
          { commandId, commandType: spec.kind, targetId: spec.targetId(command), command },
        );
        if (alreadyFinal)
          clog.info({ state: record.state }, 'command already final: outcome published again');
        // Both must hold before the offset is committed.
        await Promise.all([publishResult(origin, record, alreadyFinal), settled]);
        return;
      } catch (error) {
        // The guard could not decide (a read failed, the database is away): the row keeps its
        // state, so trying the same command again later is safe. On shutdown, leave it.
        if (stopping.signal.aborted) throw error;
        const waitMs = Math.min(30_000, 1000 * 2 ** Math.min(attempt - 1, 5));
        if (error instanceof GuardBusyError)
          clog.warn({ waitMs }, 'command still worked on by another process: trying again');
        else clog.error({ err: error, waitMs }, 'command interrupted: trying again');
        await sleep(waitMs, undefined, { signal: stopping.signal });
      }
    }
  }

  return {
    groupId,
    async start() {
      await producer.connect();
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        partitionsConsumedConcurrently: concurrency,
        eachMessage: async ({ partition, message, heartbeat }) => {
          const log = logger.child({ partition, offset: message.offset });
          // A command may wait minutes (Retry-After, back-off, a slow partner): keep the
          // membership alive meanwhile so the partition is not handed to another member.
          const beat = setInterval(() => void heartbeat().catch(() => undefined), 3000);
          try {
            await traceCommand(spec.name, message, () => handle({ partition, message }, log));
          } finally {
            clearInterval(beat);
          }
          // Only after the outcome / dead letter is on Kafka.
          await consumer.commitOffsets([
            { topic, partition, offset: (BigInt(message.offset) + 1n).toString() },
          ]);
        },
      });
      logger.info({ groupId }, 'consumer started');
    },
    async stop() {
      stopping.abort();
      gate.close();
      await consumer.disconnect();
      await producer.disconnect();
      await locks.close();
      logger.info({ groupId }, 'consumer stopped');
    },
  };
}
