import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { AnyCommandType } from '../command-types/command-type.js';
import type { Db } from '../db/prisma.js';
import { DEAD_LETTER_REASONS } from '../dead-letters/dead-letter-headers.js';
import { PARTNER_ERROR_CODES } from '../contracts/outcomes.js';
import {
  createCommandLocks,
  createCommandRepository,
  createSnapshotPageCache,
  createSnapshotStore,
  createThrottleGate,
  FINAL_STATES,
  keyPinnedReadBack,
  VERDICTS,
  type GuardOptions,
  type GuardPartner,
  type ReadBackStrategy,
} from '../guard/index.js';
import { createPaymentLedger } from '../command-types/rental-payments/payment-ledger.js';
import { watchConsumer, type ConsumerHealth } from '../kafka/consumer-health.js';
import { createSharedProducer, type SharedProducer } from '../kafka/shared-producer.js';
import { type Logger, logSummary } from '../logger.js';
import { exposeMetrics, metrics, startAtZero } from '../metrics.js';
import type { SourcePartners } from '../partner/source-partners.js';
import { traceCommand } from '../telemetry.js';
import { createResultPublisher } from './publish-result.js';
import { createCommandHandler, parseCommandMessage } from './run-command.js';
import { createReadAhead } from './read-ahead.js';
import type { Ordering } from './key-order.js';
import { commandSourceOf, targetIdOf } from '../contracts/command-contracts.js';
import { destinationsOf } from './outcome-events.js';

/**
 * The consumer of one command type (a row of src/command-types/command-types.ts): one Kafka consumer on
 * its topic that reads ahead of the commands it applies and applies commands for different target
 * records at once, one record's commands one at a time in arrival order
 * (src/command-consumer/read-ahead.ts, decision 054). Each message is handled
 * (src/command-consumer/run-command.ts), and a partition's offset is committed only up to its oldest
 * command whose outcome or dead letter is not yet on Kafka. A crash in between redelivers those
 * messages; the guard finds the final ones and publishes their outcomes again without writing.
 */

export interface CommandConsumerDeps {
  kafka: Kafka;
  db: Db;
  /**
   * DATABASE_URL: the guard's per-command locks hold connections of their own (one per partition
   * consumed concurrently, on top of the Prisma pool).
   */
  databaseUrl: string;
  /** The deployment key's client: every command when `partners` is not given. */
  partner: GuardPartner;
  /**
   * The client acting for each command's source (src/partner/source-partners.ts): a source with a
   * key of its own in PMS_PARTNER_KEYS writes, snapshots and reads back with it. Default: `partner`
   * for every source.
   */
  partners?: SourcePartners<GuardPartner>;
  logger: Logger;
  /** KAFKA_TOPIC_PREFIX. */
  topicPrefix: string;
  /** The process's one producer (src/app/composition-root.ts). Default: one of the consumer's own. */
  producer?: SharedProducer;
  /** Default `<topicPrefix>rentbridge.<name>`. */
  groupId?: string;
  /** CONSUMER_CONCURRENCY: commands applied at once (for different target records). Default 8. */
  concurrency?: number;
  /**
   * CONSUMER_READ_AHEAD: messages held by the consumer (waiting and being applied); past it the
   * partitions pause. Default 2000.
   */
  readAhead?: number;
  /** Kafka session time-out: how soon a dead member's partitions move on. Default kafkajs's 30 s. */
  sessionTimeoutMs?: number;
  guard?: GuardOptions;
  /**
   * How long a list page read for one command's snapshot serves the snapshots of others (see
   * src/guard/read-backs/read-back.ts). Default 1000 ms; 0 reads a page per snapshot.
   */
  snapshotPageTtlMs?: number;
  /**
   * SNAPSHOT_MAX_AGE_MS (issue 43): a snapshot may rest on the latest stored read of the record
   * (any process's, the poller's too) while it is younger than this; older is refused and re-read.
   * Unset or 0: no stored reads (every snapshot reads its page).
   */
  snapshotMaxAgeMs?: number;
}

export interface CommandConsumer {
  readonly groupId: string;
  /** In its group, not crash-looping, its lag: for /readyz. */
  readonly health: ConsumerHealth;
  start(): Promise<void>;
  /** Commits what is final, leaves the commands in hand as they are (their rows keep their state), leaves the group. */
  stop(): Promise<void>;
}

/** Every final status, verdict, reason and code of the type from 0: the first one must raise its alert. */
function countFromZero(type: AnyCommandType) {
  exposeMetrics('commands');
  startAtZero(metrics.commands, { command: [type.kind], status: FINAL_STATES });
  startAtZero(metrics.readBacks, { command: [type.kind], verdict: VERDICTS });
  startAtZero(metrics.deadLetters, { topic: [type.topic], reason: DEAD_LETTER_REASONS });
  startAtZero(metrics.commandsRefused, { command: [type.kind], code: [...PARTNER_ERROR_CODES, 'other'] });
}

/**
 * The client acting for each source, each with one read-back strategy (and snapshot page cache):
 * a scoped key sees another list, so a page read with one key never serves another key's reads,
 * and a snapshot names the key that read it, so a read-back with another key (PMS_PARTNER_KEYS
 * changed in between) is no evidence (src/guard/read-backs/read-back.ts).
 */
function actingBySource(type: AnyCommandType, deps: CommandConsumerDeps) {
  const ttlMs = deps.snapshotPageTtlMs ?? 1000;
  const strategies = new Map<GuardPartner, ReadBackStrategy<unknown>>();
  return (source: string) => {
    const { partner, key, keyId } = deps.partners?.forSource(source) ?? {
      partner: deps.partner,
      key: 'deployment' as const,
      keyId: 'deployment',
    };
    let strategy = strategies.get(partner);
    if (!strategy) {
      const maxAgeMs = deps.snapshotMaxAgeMs ?? 0;
      strategy = keyPinnedReadBack(
        type.readBack(partner, {
          ...(ttlMs > 0 && { snapshotCache: createSnapshotPageCache({ ttlMs }) }),
          ...(maxAgeMs > 0 && { snapshotStore: createSnapshotStore({ db: deps.db, keyId, maxAgeMs }) }),
          // rentbridge's own rows complete a baseline that could not see payments (decision 047).
          ledger: createPaymentLedger(deps.db),
        }),
        keyId,
      );
      strategies.set(partner, strategy);
    }
    return { partner, key, strategy: strategy! };
  };
}

export function createCommandConsumer(type: AnyCommandType, deps: CommandConsumerDeps): CommandConsumer {
  // The prefix namespaces the group too: two deployments (or test runs) on one cluster never share offsets.
  const groupId = deps.groupId ?? `${deps.topicPrefix}rentbridge.${type.name}`;
  const dest = destinationsOf(type, deps.topicPrefix, groupId);
  const { topic } = dest;
  const logger = deps.logger.child({ component: 'consumer', consumer: type.name, topic });
  const repository = createCommandRepository(deps.db);
  const concurrency = deps.concurrency ?? 8;
  // Twice as many connections as commands at once, so an unlock still on its way never delays the
  // next command.
  const locks = createCommandLocks({ databaseUrl: deps.databaseUrl, logger, max: 2 * concurrency });
  const stopping = new AbortController();
  const consumer: Consumer = deps.kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    // A stop waits for the fetch in flight: kafkajs's 5 s long poll made each consumer take 5 s to
    // stop. One second costs an idle consumer one fetch a second.
    maxWaitTimeInMs: 1000,
    ...(deps.sessionTimeoutMs && { sessionTimeout: deps.sessionTimeoutMs, heartbeatInterval: 1000 }),
  });
  // Ready while it first joins: after a crash the join waits out the dead member's session, and
  // the commands meanwhile wait in Kafka (decision 059).
  const health = watchConsumer(consumer, { groupId, topics: () => [topic], readyWhileJoining: true });
  const producer = deps.producer ?? createSharedProducer(deps.kafka);
  countFromZero(type);
  // A 429 pauses the rate budget in the Partner client's transport, for every process sharing it;
  // the gate only stops this consumer fetching meanwhile.
  const gate = createThrottleGate({
    onPause: (until) => {
      logger.warn({ until: until.toISOString() }, 'throttled: pausing the consumer');
      readAhead.throttled(true);
    },
    onResume: () => {
      logger.info('resuming after throttle');
      readAhead.throttled(false);
    },
  });
  const handle = createCommandHandler({
    dest,
    repository,
    locks,
    actingFor: actingBySource(type, deps),
    publisher: createResultPublisher({ dest, producer, repository, logger }),
    throttle: gate,
    signal: stopping.signal,
    ...(deps.guard && { guard: deps.guard }),
    finals: logSummary(logger, 'commands applied (count by state)'),
  });

  const readAhead = createReadAhead({
    consumer,
    topic,
    logger,
    orderOf: (message, partition) => orderOf(type, message, partition),
    run: (partition, message, release) => {
      const log = logger.child({ partition, offset: message.offset });
      return traceCommand(type.name, message, () => handle({ partition, message }, log, release));
    },
    maxHeld: Math.max(deps.readAhead ?? 2000, concurrency),
    concurrency,
    signal: stopping.signal,
    onBug: (error) => {
      // Decision 021: a bug is not retried in a loop that would hide it. Nothing past the command
      // is committed; the consumer stops and says why on /readyz until a restart with fixed code.
      logger.error({ err: error }, 'consumer stopped: a command failed with an error that is not retried');
      health.fail(error instanceof Error ? error.message : String(error));
      void consumer.stop().catch(() => undefined);
    },
  });
  consumer.on(consumer.events.GROUP_JOIN, () => readAhead.joined());

  return {
    groupId,
    health,
    async start() {
      await producer.get();
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      // Not awaited: run() returns once the consumer is in its group, which after a crash waits for
      // the broker to drop the dead process's member (its session timeout). The process serves
      // meanwhile (readyWhileJoining); a join that fails stops the consumer and says so on /readyz.
      health.joining();
      const running = consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: (payload) => readAhead.eachBatch(payload),
      });
      void running.then(
        () => logger.info({ groupId, concurrency }, 'consumer in its group'),
        (error: unknown) => {
          logger.error({ err: error }, 'consumer did not start');
          health.fail(error instanceof Error ? error.message : String(error));
        },
      );
      logger.info({ groupId, concurrency }, 'consumer started (joining its group)');
    },
    async stop() {
      await readAhead.close();
      stopping.abort();
      gate.close();
      await consumer.disconnect();
      // The process's shared producer is closed by its owner, after every user has stopped.
      if (!deps.producer) await producer.close();
      await locks.close();
      logger.info({ groupId }, 'consumer stopped');
    },
  };
}

/**
 * The record a message is about, which orders it: its command's target (a registration's
 * normalized e-mail, else the enrollment, application or customer id), else its Kafka key (the
 * producer's word for it), else nothing shared (an unreadable message orders nothing); and its
 * source. Held in memory only: a key may be personal data (an e-mail) and is never logged.
 */
function orderOf(type: AnyCommandType, message: KafkaMessage, partition: number): Ordering {
  const parsed = parseCommandMessage(type, { partition, message });
  // When the command was taken in (its CloudEvent's time, the outbox row's), else when it was
  // published: the relay publishes a Kafka outage's backlog all at once.
  const published = Number(message.timestamp);
  const taken = parsed.ok && parsed.time !== undefined ? Date.parse(parsed.time) : NaN;
  const at = Number.isFinite(taken) ? taken : published;
  if (parsed.ok)
    return { key: `t:${targetIdOf(type, parsed.command)}`, source: commandSourceOf(parsed.ceSource), at };
  const key =
    message.key && message.key.length > 0
      ? `k:${message.key.toString()}`
      : `m:${partition}:${message.offset}`;
  return { key, source: '', at };
}
