import { setTimeout as sleep } from 'node:timers/promises';
import type { Consumer, IHeaders, Kafka, KafkaMessage, TopicMessages } from 'kafkajs';
import type { ZodType } from 'zod';
import { backoffDelay, type BackoffPolicy } from '../backoff.js';
import type { Db } from '../db/prisma.js';
import {
  DEAD_LETTER_REASONS,
  REDRIVE_HEADER,
  toDeadLetterHeaders,
  withOriginalHeaders,
  type DeadLetterReason,
} from '../dead-letters/dead-letter-headers.js';
import { cloudEventHeaders, parseCloudEvent, toCloudEvent } from '../events/cloudevent.js';
import {
  commandSourceOf,
  describeIdentity,
  escapeId,
  type CommandIdentity,
} from '../events/command-identity.js';
import {
  errorCodeLabel,
  isSuccess,
  OUTCOME_TYPES,
  PARTNER_ERROR_CODES,
  type CommandKind,
  type CommandOutcome,
} from '../events/outcomes.js';
import {
  createCommandLocks,
  createCommandRepository,
  GuardBusyError,
  createThrottleGate,
  guardedWrite,
  type CommandRecord,
  type CommandRepository,
  type FailureInput,
  type GuardOptions,
  type GuardPartner,
  createSnapshotPageCache,
  type ReadBackStrategy,
  type SnapshotPageCache,
  preferredRequestIdBase,
  FINAL_STATES,
  VERDICTS,
} from '../guard/index.js';
import { messagePositions } from '../kafka/message-positions.js';
import { createSharedProducer, type SharedProducer } from '../kafka/shared-producer.js';
import { TOPICS, topicName } from '../kafka/topics.js';
import type { Logger } from '../logger.js';
import { watchConsumer, type ConsumerHealth } from '../kafka/consumer-health.js';
import { exposeMetrics, metrics, startAtZero } from '../metrics.js';
import type { OutcomeError } from '../partner/errors.js';
import type { SourcePartners } from '../partner/source-partners.js';
import { traceCommand, traceContextFor, traceOutcome, withTraceExtension } from '../telemetry/telemetry.js';

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
  /**
   * A check before the guarded write (a registration's eligibility check), run by the guard's
   * state machine: a refusal ends the command `rejected`; it is then published like any other.
   */
  check?: CommandCheck<C>;
  /**
   * Once the command is final: fields the outcome carries beside the guard's (the ids the PMS
   * maps its tenant to) and commands that follow from it (a registration's enrollment), published
   * with the outcome before the offset is committed. Throwing makes the consumer try again later.
   */
  complete?(command: C, record: CommandRecord, tools: StepTools): Promise<Completion>;
}

export interface CommandCheck<C> {
  /** Whether this command asks for the check. */
  wants(command: C): boolean;
  /** Null when the command passes; else the refusal. Throws on a transient failure. */
  run(command: C, tools: StepTools): Promise<FailureInput | null>;
}

/** What `check` / `complete` may use. */
export interface StepTools {
  /** The command's identity (source + type + id): the key of its guard row. */
  identity: CommandIdentity;
  partner: GuardPartner;
  repository: CommandRepository;
  logger: Logger;
  /** X-Request-Id for the step's next Partner API call: `<command>.s<n>`. */
  nextRequestId(): string;
}

export interface FollowUpCommand {
  /** Logical topic. */
  topic: string;
  key: string;
  /** Stable: a republished follow-up carries the same CloudEvent id. */
  id: string;
  type: string;
  subject: string;
  data: unknown;
}

export interface Completion {
  fields?: Partial<CommandOutcome>;
  followUps?: FollowUpCommand[];
}

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
  /** In its group, not crash-looping, its lag: for /readyz. */
  readonly health: ConsumerHealth;
  start(): Promise<void>;
  /** Finishes the command in hand, then leaves the group. */
  stop(): Promise<void>;
}

/** Trying a command again after the guard could not decide: 1 s doubled, at most 30 s. */
const COMMAND_RETRY: BackoffPolicy = { initialRetryTime: 1000, maxRetryTime: 30_000, maxGrowths: 5 };

/** Source of the outcomes and dead letters this consumer publishes. */
const SOURCE = (name: string) => `/consumers/${name}`;

function headerValue(headers: IHeaders | undefined, name: string): string | undefined {
  const v = headers?.[name];
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined ? undefined : one.toString();
}

/** The value as a CloudEvent, or null when it is not one (an `invalid_message` letter, say). */
function cloudEventOrNull(value: Buffer | null) {
  try {
    return parseCloudEvent(value);
  } catch {
    return null;
  }
}

/** Best effort: the command's source, id and target of a message that failed its type or schema. */
function looseCommand(value: Buffer | null): {
  source: string | null;
  commandId: string | null;
  targetId: string | null;
} {
  try {
    const event = JSON.parse(value?.toString() ?? '') as { source?: unknown; data?: Record<string, unknown> };
    const data = event.data;
    const id = data?.decision_id ?? data?.payment_id ?? data?.registration_id ?? data?.enrollment_request_id;
    const email = typeof data?.email === 'string' ? data.email.toLowerCase() : undefined;
    const target = data?.application_id ?? data?.enrollment_id ?? data?.customer_id ?? email;
    return {
      source: typeof event.source === 'string' && event.source !== '' ? commandSourceOf(event.source) : null,
      commandId: typeof id === 'string' && id !== '' ? id : null,
      targetId: typeof target === 'string' || typeof target === 'number' ? String(target) : null,
    };
  } catch {
    return { source: null, commandId: null, targetId: null };
  }
}

export function toOutcome(kind: CommandKind, record: CommandRecord): CommandOutcome {
  const status = record.state as CommandOutcome['status'];
  return {
    command_id: record.commandId,
    command_source: record.source,
    command_type: kind,
    target_id: record.targetId,
    status,
    attempts: record.attempts,
    partner_request_ids: record.requestIds,
    ...(!isSuccess(status) && record.lastError ? { error: outcomeError(record) } : {}),
  };
}

/**
 * The outcome's `error`: the Partner API's envelope whole when the guard kept it, else (a failure
 * without an answer, or a row written before the guard kept envelopes) what the guard recorded.
 */
function outcomeError(record: CommandRecord): OutcomeError {
  const last = record.lastError!;
  return (
    last.partner_error ?? {
      code: last.code,
      status: last.status,
      message: last.message,
      request_id: record.requestIds.at(-1) ?? null,
    }
  );
}

/**
 * A refusal that, from a source's own key, means the record is outside what the key may reach:
 * spec 5.9 (a scoped key sees other records as `404 not_found`) and 5.8 (a read-only key gets
 * `403 forbidden` on writes). The guard already ends them `rejected` without a retry or a
 * read-back; the dead letter says why in words an operator reads.
 */
function outsideScope(record: CommandRecord, source: string): string | null {
  const e = record.lastError;
  if (record.state !== 'rejected' || !e) return null;
  const refused =
    (e.status === 404 && (e.code === 'not_found' || e.code == null)) ||
    (e.status === 403 && (e.code === 'forbidden' || e.code == null));
  if (!refused) return null;
  return `the record is outside the scope of source "${source}"'s Partner API key (${e.status} ${e.code ?? ''}: ${e.message})`;
}

/** Whom a command acts for: its identity's source, its CloudEvent source, and which key acts. */
type Acting = { source: string; ceSource: string; key: 'own' | 'deployment' };

/** Headers an outcome or dead letter takes over from its command: the trail back to the webhook. */
const TRAIL_HEADERS = ['webhook-id', 'request-id'] as const;

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
  const readBackFor = (partner: GuardPartner) =>
    spec.readBack(partner, ttlMs > 0 ? { snapshotCache: createSnapshotPageCache({ ttlMs }) } : {});
  // One strategy (and snapshot page cache) per key: a scoped key sees another list, so a page read
  // with one key never serves a snapshot or read-back made with another.
  const strategies = new Map<GuardPartner, ReadBackStrategy<C>>();
  function actingFor(source: string) {
    const { partner, key } = deps.partners?.forSource(source) ?? {
      partner: deps.partner,
      key: 'deployment' as const,
    };
    let strategy = strategies.get(partner);
    if (!strategy) {
      strategy = readBackFor(partner);
      strategies.set(partner, strategy);
    }
    return { partner, key, strategy };
  }
  const stopping = new AbortController();

  const consumer: Consumer = deps.kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    // A stop waits for the fetch in flight: kafkajs's 5 s long poll made each consumer take 5 s to
    // stop. One second costs an idle consumer one fetch a second.
    maxWaitTimeInMs: 1000,
    ...(deps.sessionTimeoutMs && { sessionTimeout: deps.sessionTimeoutMs, heartbeatInterval: 1000 }),
  });
  const health = watchConsumer(consumer, { groupId, topics: () => [topic] });
  const producer = deps.producer ?? createSharedProducer(deps.kafka);
  exposeMetrics('commands');
  // Every final status, verdict, reason and code of this command from 0 (src/metrics.ts): the
  // first `unverified` command or dead letter must raise its alert.
  startAtZero(metrics.commands, { command: [spec.kind], status: FINAL_STATES });
  startAtZero(metrics.readBacks, { command: [spec.kind], verdict: VERDICTS });
  startAtZero(metrics.deadLetters, { topic: [spec.topic], reason: DEAD_LETTER_REASONS });
  startAtZero(metrics.commandsRefused, { command: [spec.kind], code: [...PARTNER_ERROR_CODES, 'other'] });
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
      /** The command's source, when known (its type is the topic's). */
      commandSource: string | null;
      error: { code: string | null; status: number | null; message: string } | null;
      /** The Partner API's error whole (the outcome's `error`). */
      partnerError?: OutcomeError | null;
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
      error: info.partnerError ?? null,
      attempts: info.attempts,
      firstFailureAt: info.firstFailureAt,
      lastFailureAt: info.lastFailureAt,
      partnerRequestIds: info.partnerRequestIds,
      consumerGroup: groupId,
      commandId: info.commandId,
      ...(info.commandId != null && info.commandSource != null
        ? { commandSource: info.commandSource, commandType: spec.kind }
        : {}),
    });
    return {
      topic: dlqTopic,
      messages: [
        {
          key: origin.message.key,
          value: origin.message.value,
          // The original's headers (CloudEvents binding, webhook trail) beside the dlq-* ones.
          headers: withOriginalHeaders(
            origin.message.headers,
            headers,
            cloudEventOrNull(origin.message.value),
          ),
        },
      ],
    };
  }

  /**
   * An outcome as a CloudEvent: its command's source and type also as extension attributes
   * (`commandsource`, `commandtype`) and headers, so a back-office routes or tells two `42`s apart
   * without parsing `data`. The trace context goes as a header and as the CloudEvents
   * distributed-tracing extension, so a back-office consuming outcomes joins the trace.
   */
  function outcomeMessage(
    id: string,
    outcome: CommandOutcome,
    trail: Record<string, string>,
    traceContext: Record<string, string>,
  ) {
    const event = {
      ...toCloudEvent({
        id,
        source: SOURCE(spec.name),
        type: OUTCOME_TYPES[spec.kind],
        subject: outcome.target_id,
        data: outcome,
      }),
      commandsource: outcome.command_source,
      commandtype: outcome.command_type,
    };
    return {
      key: outcome.target_id,
      value: JSON.stringify(withTraceExtension(event, traceContext)),
      headers: {
        ...cloudEventHeaders(event),
        ...trail,
        ...traceContext,
        'command-id': outcome.command_id,
        'command-source': outcome.command_source,
        'command-type': outcome.command_type,
      },
    };
  }

  function trailOf(origin: Origin): Record<string, string> {
    const trail: Record<string, string> = {};
    for (const name of TRAIL_HEADERS) {
      const value = headerValue(origin.message.headers, name);
      if (value !== undefined) trail[name] = value;
    }
    return trail;
  }

  async function publishResult(
    origin: Origin,
    record: CommandRecord,
    redelivered: boolean,
    completion: Completion = {},
    acting: Acting,
  ) {
    const outcome = { ...toOutcome(spec.kind, record), ...completion.fields };
    // Inside the outcome's span, so the trace context the messages carry is that span's.
    await traceOutcome(record.commandId, record.state, async () => {
      // Every message published here carries the trace context, as a header and as the CloudEvents
      // distributed-tracing extension, so a back-office consuming outcomes joins the trace.
      const traceContext = traceContextFor(origin.message.headers);
      // Stable per command identity (its request-id base is unique to it and is the command id
      // when that fits): a republished outcome carries the same id.
      const outcomeId = `outcome.${record.requestIdBase}`;
      const trail = trailOf(origin);
      const batches: TopicMessages[] = [
        { topic: outcomeTopic, messages: [outcomeMessage(outcomeId, outcome, trail, traceContext)] },
      ];
      for (const next of completion.followUps ?? []) {
        const command = toCloudEvent({
          id: next.id,
          // The cause's source: the follow-up is the same PMS's command (part of its identity) and
          // acts for that source with its key.
          source: acting.ceSource,
          type: next.type,
          subject: next.subject,
          data: next.data as never,
        });
        batches.push({
          topic: topicName(deps.topicPrefix, next.topic),
          messages: [
            {
              key: next.key,
              value: JSON.stringify(withTraceExtension(command, traceContext)),
              // Its own event, linked by `caused-by`; the webhook's trail goes on, so its outcome and a
              // trace by webhook-id or request-id find it too.
              headers: {
                ...cloudEventHeaders(command),
                ...trail,
                ...traceContext,
                'caused-by': record.commandId,
              },
            },
          ],
        });
      }
      const reason = DEAD_LETTER_REASONS.find((r) => r === record.state);
      // A redriven command that is final again is not dead-lettered again (no redrive loop); a
      // plain redelivery is, because the first dead letter may not have reached Kafka.
      const redriven = headerValue(origin.message.headers, REDRIVE_HEADER.redrivenFrom) !== undefined;
      if (reason && !(redelivered && redriven)) {
        const failedAt = (iso: string | undefined) =>
          iso ? new Date(iso) : (record.finishedAt ?? new Date());
        const scope = acting.key === 'own' ? outsideScope(record, acting.source) : null;
        batches.unshift(
          deadLetter(origin, reason, {
            commandId: record.commandId,
            commandSource: record.source,
            error: scope && record.lastError ? { ...record.lastError, message: scope } : record.lastError,
            partnerError: outcome.error ?? null,
            attempts: record.attempts,
            firstFailureAt: failedAt(record.lastError?.first_failure_at),
            lastFailureAt: failedAt(record.lastError?.last_failure_at),
            partnerRequestIds: record.requestIds,
          }),
        );
        metrics.deadLetters.inc({ topic: spec.topic, reason });
      }
      // Kept for the PMS status endpoint (GET /pms/:source/commands/:id): the same outcome as on Kafka.
      await repository.recordOutcome(
        { source: record.source, commandType: spec.kind, commandId: record.commandId },
        outcome,
      );
      const sentOutcome = batches.find((b) => b.topic === outcomeTopic)!.messages[0]!;
      const landed = messagePositions(
        batches,
        await (await producer.get()).sendBatch({ topicMessages: batches, acks: -1 }),
      ).get(sentOutcome);
      // Where the outcome landed, for the trace. Not awaited: the outcome is on Kafka already, and a
      // lost note costs only that line of the trace.
      if (landed)
        void repository
          .logRead(
            { source: record.source, commandType: spec.kind, commandId: record.commandId },
            {
              attempt: record.attempts,
              requestId: outcomeId,
              kind: 'outcome',
              result: 'published',
              message: `${spec.outcomeTopic}[${landed.partition}]@${landed.offset}`,
            },
          )
          .catch((error: unknown) => logger.debug({ err: error }, 'outcome position not kept'));
    });
    // Counted once per command: a redelivered final command was counted when it became final.
    if (record.state === 'rejected' && !redelivered)
      metrics.commandsRefused.inc({ command: spec.kind, code: errorCodeLabel(outcome.error?.code) });
  }

  /**
   * Same identity, other content: refused as `conflicting_duplicate`, never taken for the first
   * command and never written. The outcome (`rejected`) is this command's own: its target, and a
   * CloudEvent id of its own (the message's place), so it never replaces the first's outcome; the
   * dead letter holds this message and names both.
   */
  async function publishConflict(
    origin: Origin,
    identity: CommandIdentity,
    targetId: string,
    existing: CommandRecord,
  ) {
    const now = new Date();
    const message =
      `${describeIdentity(identity)} was already received with other content ` +
      `(target ${escapeId(existing.targetId)}, ${existing.state}, first seen ${existing.createdAt.toISOString()}, ` +
      `request ids ${existing.requestIdBase}.*); this one (target ${escapeId(targetId)}) is refused, ` +
      'nothing written: send it under an id of its own';
    const error = { code: 'conflicting_duplicate', status: null, message };
    const outcome: CommandOutcome = {
      command_id: identity.commandId,
      command_source: identity.source,
      command_type: spec.kind,
      target_id: targetId,
      status: 'rejected',
      attempts: 0,
      partner_request_ids: [],
      error: { ...error, request_id: null },
      conflicts_with: {
        target_id: existing.targetId,
        status: existing.state,
        partner_request_ids: existing.requestIds,
        first_seen_at: existing.createdAt.toISOString(),
      },
    };
    const batches: TopicMessages[] = [
      deadLetter(origin, 'conflicting_duplicate', {
        commandId: identity.commandId,
        commandSource: identity.source,
        error,
        attempts: 0,
        firstFailureAt: now,
        lastFailureAt: now,
        partnerRequestIds: [],
      }),
      {
        topic: outcomeTopic,
        messages: [
          outcomeMessage(
            `outcome.${existing.requestIdBase}.conflict.${origin.partition}-${origin.message.offset}`,
            outcome,
            trailOf(origin),
            traceContextFor(origin.message.headers),
          ),
        ],
      },
    ];
    await (await producer.get()).sendBatch({ topicMessages: batches, acks: -1 });
    metrics.deadLetters.inc({ topic: spec.topic, reason: 'conflicting_duplicate' });
    metrics.commandsRefused.inc({ command: spec.kind, code: 'other' });
  }

  async function handle(origin: Origin, log: Logger): Promise<void> {
    let command: C;
    let eventId: string;
    let ceSource: string;
    try {
      const event = parseCloudEvent(origin.message.value);
      eventId = event.id;
      ceSource = event.source;
      if (event.type !== spec.eventType) {
        throw new TypeError(`CloudEvent type "${event.type}" is not "${spec.eventType}"`);
      }
      command = spec.schema.parse(event.data);
    } catch (error) {
      // Never retried: the same bytes fail the same way (no crash loop on a poison message).
      log.warn({ err: error }, 'invalid message: dead-lettered');
      const now = new Date();
      const loose = looseCommand(origin.message.value);
      const batch = deadLetter(origin, 'invalid_message', {
        commandId: loose.commandId,
        commandSource: loose.source,
        error: { code: 'invalid_message', status: null, message: (error as Error).message ?? String(error) },
        attempts: 0,
        firstFailureAt: now,
        lastFailureAt: now,
        partnerRequestIds: [],
      });
      // Every command is promised an outcome: when its id can be read (an unknown CloudEvent type,
      // a field that fails the schema), a rejected one goes with the dead letter. Its CloudEvent id
      // names the message, so a valid command with the same id later keeps an outcome id of its own.
      const batches: TopicMessages[] = [batch];
      if (loose.commandId) {
        const targetId = loose.targetId ?? origin.message.key?.toString() ?? loose.commandId;
        const outcome: CommandOutcome = {
          command_id: loose.commandId,
          command_source: loose.source ?? '',
          command_type: spec.kind,
          target_id: targetId,
          status: 'rejected',
          attempts: 0,
          partner_request_ids: [],
          error: {
            code: 'invalid_message',
            status: null,
            message: (error as Error).message ?? String(error),
            request_id: null,
          },
        };
        batches.push({
          topic: outcomeTopic,
          messages: [
            outcomeMessage(
              `outcome.${preferredRequestIdBase({ source: outcome.command_source, commandType: spec.kind, commandId: loose.commandId })}.invalid.${origin.partition}-${origin.message.offset}`,
              outcome,
              {},
              traceContextFor(origin.message.headers),
            ),
          ],
        });
      }
      await (await producer.get()).sendBatch({ topicMessages: batches, acks: -1 });
      metrics.deadLetters.inc({ topic: spec.topic, reason: 'invalid_message' });
      return;
    }

    const commandId = spec.commandId(command);
    const identity: CommandIdentity = {
      source: commandSourceOf(ceSource),
      commandType: spec.kind,
      commandId,
    };
    const targetId = spec.targetId(command);
    // Every Partner API call of this command (steps, snapshot, write, read-back) with one key: its
    // source's own, else the deployment's.
    const { partner, key, strategy } = actingFor(identity.source);
    const acting: Acting = { source: identity.source, ceSource, key };
    // The CloudEvent id ties this command to its webhook and outbox row; its identity to its
    // Partner API attempts (request ids `<base>.a<n>`), outcome and dead letter.
    const clog = log.child({ commandId, commandSource: identity.source, eventId, partnerKey: key });
    let steps = 0;
    const tools: StepTools = {
      identity,
      partner,
      repository,
      logger: clog,
      // Before its row exists the command's base is the one it asks for; steps run before the row.
      nextRequestId: () => `${preferredRequestIdBase(identity)}.s${++steps}`,
    };
    for (let attempt = 1; ; attempt++) {
      try {
        const check = spec.check?.wants(command) ? spec.check : undefined;
        const { record, alreadyFinal, conflict, settled } = await guardedWrite(
          {
            repository,
            locks,
            strategy,
            logger: log, // the guard adds commandId itself
            throttle: gate,
            signal: stopping.signal,
            ...(deps.guard && { options: deps.guard }),
          },
          { ...identity, targetId, command, ...(check && { check: () => check.run(command, tools) }) },
        );
        if (conflict) {
          await Promise.all([publishConflict(origin, identity, targetId, record), settled]);
          return;
        }
        if (alreadyFinal)
          clog.info({ state: record.state }, 'command already final: outcome published again');
        // Both must hold before the offset is committed.
        const completion = spec.complete ? await spec.complete(command, record, tools) : {};
        await Promise.all([publishResult(origin, record, alreadyFinal, completion, acting), settled]);
        return;
      } catch (error) {
        // The guard could not decide (a read failed, the database is away): the row keeps its
        // state, so trying the same command again later is safe. On shutdown, leave it.
        if (stopping.signal.aborted) throw error;
        const waitMs = backoffDelay(COMMAND_RETRY, attempt);
        if (error instanceof GuardBusyError)
          clog.warn({ waitMs }, 'command still worked on by another process: trying again');
        // Transient (a read or the database did not answer in time) and retried: a person is
        // needed only when it keeps happening.
        else
          clog[attempt >= 5 ? 'error' : 'warn'](
            { err: error, waitMs, attempt },
            'command interrupted: trying again',
          );
        await sleep(waitMs, undefined, { signal: stopping.signal });
      }
    }
  }

  return {
    groupId,
    health,
    async start() {
      await producer.get();
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
      // The process's shared producer is closed by its owner, after every user has stopped.
      if (!deps.producer) await producer.close();
      await locks.close();
      logger.info({ groupId }, 'consumer stopped');
    },
  };
}
