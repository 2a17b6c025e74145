import type { IHeaders, KafkaMessage, Message, TopicMessages } from 'kafkajs';
import type { AnyCommandType, FollowUpCommand } from '../command-types/command-type.js';
import {
  toDeadLetterHeaders,
  withOriginalHeaders,
  type DeadLetterReason,
} from '../dead-letters/dead-letter-headers.js';
import { cloudEventHeaders, parseCloudEvent, toCloudEvent } from '../contracts/cloudevent.js';
import { isSuccess, type CommandKind, type CommandOutcome } from '../contracts/outcomes.js';
import type { CommandRecord } from '../guard/index.js';
import { TOPICS, topicName } from '../kafka/topics.js';
import type { OutcomeError } from '../partner/errors.js';
import { withTraceExtension } from '../telemetry.js';

/**
 * The events a command consumer publishes, each built in ONE place, pure: the outcome
 * (`outcomeEvent`), the dead letter (`deadLetterEvent`) and a follow-up command
 * (`followUpEvent`); and the outcome's data, from a guard row (`toOutcome`) or from a refusal by
 * rentbridge itself (`refusedOutcome`).
 */

/**
 * What every part of one command consumer shares: its command type (a row of the table,
 * src/command-types/command-types.ts) and the physical names it reads and writes.
 */
export interface Destinations {
  type: AnyCommandType;
  /** KAFKA_TOPIC_PREFIX, for follow-up commands' topics. */
  topicPrefix: string;
  groupId: string;
  /** Physical topic names (with KAFKA_TOPIC_PREFIX). */
  topic: string;
  outcomeTopic: string;
  dlqTopic: string;
}

export function destinationsOf(type: AnyCommandType, topicPrefix: string, groupId: string): Destinations {
  return {
    type,
    topicPrefix,
    groupId,
    topic: topicName(topicPrefix, type.topic),
    outcomeTopic: topicName(topicPrefix, type.outcomeTopic),
    dlqTopic: topicName(topicPrefix, TOPICS.dlq(type.topic)),
  };
}

/** The message a command came in: where it was, for its dead letter and its outcome's ids. */
export interface Origin {
  partition: number;
  message: KafkaMessage;
}

/** Whom a command acts for: its identity's source, its CloudEvent source, and which key acts. */
export interface Acting {
  source: string;
  ceSource: string;
  key: 'own' | 'deployment';
}

/** Headers an outcome or dead letter takes over from its command: the trail back to the webhook. */
const TRAIL_HEADERS = ['webhook-id', 'request-id'] as const;

export function headerValue(headers: IHeaders | undefined, name: string): string | undefined {
  const v = headers?.[name];
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined ? undefined : one.toString();
}

export function trailOf(origin: Origin): Record<string, string> {
  const trail: Record<string, string> = {};
  for (const name of TRAIL_HEADERS) {
    const value = headerValue(origin.message.headers, name);
    if (value !== undefined) trail[name] = value;
  }
  return trail;
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

/** The outcome of a command the guard has made final. */
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
 * The outcome of a command rentbridge refused itself, before any write (`invalid_message`,
 * `conflicting_duplicate`): `rejected`, no attempts, the refusal as its error.
 */
export function refusedOutcome(refusal: {
  kind: CommandKind;
  commandId: string;
  source: string;
  targetId: string;
  error: { code: string; message: string };
  conflictsWith?: CommandOutcome['conflicts_with'];
}): CommandOutcome {
  return {
    command_id: refusal.commandId,
    command_source: refusal.source,
    command_type: refusal.kind,
    target_id: refusal.targetId,
    status: 'rejected',
    attempts: 0,
    partner_request_ids: [],
    error: { code: refusal.error.code, status: null, message: refusal.error.message, request_id: null },
    ...(refusal.conflictsWith && { conflicts_with: refusal.conflictsWith }),
  };
}

/**
 * An outcome as a CloudEvent: its command's source and type also as extension attributes
 * (`commandsource`, `commandtype`) and headers, so a back-office routes or tells two `42`s apart
 * without parsing `data`. The trace context goes as a header and as the CloudEvents
 * distributed-tracing extension, so a back-office consuming outcomes joins the trace.
 */
export function outcomeEvent(
  dest: Destinations,
  id: string,
  outcome: CommandOutcome,
  trail: Record<string, string>,
  traceContext: Record<string, string>,
): Message {
  const event = {
    ...toCloudEvent({
      id,
      // Source of the outcomes and dead letters this consumer publishes.
      source: `/consumers/${dest.type.name}`,
      type: dest.type.outcomeType,
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

/** What a dead letter says beside its origin and reason. */
export interface DeadLetterFacts {
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
}

/** The value as a CloudEvent, or null when it is not one (an `invalid_message` letter, say). */
function cloudEventOrNull(value: Buffer | null) {
  try {
    return parseCloudEvent(value);
  } catch {
    return null;
  }
}

/** The dead letter of the message `origin`: its bytes as they came, with the `dlq-*` headers. */
export function deadLetterEvent(
  dest: Destinations,
  origin: Origin,
  reason: DeadLetterReason,
  facts: DeadLetterFacts,
): TopicMessages {
  const headers = toDeadLetterHeaders({
    originalTopic: dest.topic,
    originalPartition: origin.partition,
    originalOffset: origin.message.offset,
    originalKey: origin.message.key?.toString() ?? null,
    reason,
    errorCode: facts.error?.code ?? null,
    errorStatus: facts.error?.status ?? null,
    errorMessage: facts.error?.message ?? null,
    error: facts.partnerError ?? null,
    attempts: facts.attempts,
    firstFailureAt: facts.firstFailureAt,
    lastFailureAt: facts.lastFailureAt,
    partnerRequestIds: facts.partnerRequestIds,
    consumerGroup: dest.groupId,
    commandId: facts.commandId,
    ...(facts.commandId != null && facts.commandSource != null
      ? { commandSource: facts.commandSource, commandType: dest.type.kind }
      : {}),
  });
  const { key, value } = origin.message;
  // The original's headers (CloudEvents binding, webhook trail) beside the dlq-* ones.
  const all = withOriginalHeaders(origin.message.headers, headers, cloudEventOrNull(value));
  return { topic: dest.dlqTopic, messages: [{ key, value, headers: all }] };
}

/**
 * A command that follows from a final one (a registration's enrollment): its own event, linked by
 * `caused-by`, with the cause's CloudEvent source (it is the same PMS's command, part of its
 * identity, and acts for that source with its key). The webhook's trail goes on, so its outcome
 * and a trace by webhook-id or request-id find it too.
 */
export function followUpEvent(
  dest: Destinations,
  next: FollowUpCommand,
  cause: { commandId: string; ceSource: string },
  trail: Record<string, string>,
  traceContext: Record<string, string>,
): TopicMessages {
  const command = toCloudEvent({
    id: next.id,
    source: cause.ceSource,
    type: next.type,
    subject: next.subject,
    data: next.data as never,
  });
  const headers = { ...cloudEventHeaders(command), ...trail, ...traceContext, 'caused-by': cause.commandId };
  return {
    topic: topicName(dest.topicPrefix, next.topic),
    messages: [{ key: next.key, value: JSON.stringify(withTraceExtension(command, traceContext)), headers }],
  };
}

/**
 * A refusal that, from a source's own key, means the record is outside what the key may reach:
 * spec 5.9 (a scoped key sees other records as `404 not_found`) and 5.8 (a read-only key gets
 * `403 forbidden` on writes). The guard already ends them `rejected` without a retry or a
 * read-back; the dead letter says why in words an operator reads.
 */
export function outsideScope(record: CommandRecord, source: string): string | null {
  const e = record.lastError;
  if (record.state !== 'rejected' || !e) return null;
  const refused =
    (e.status === 404 && (e.code === 'not_found' || e.code == null)) ||
    (e.status === 403 && (e.code === 'forbidden' || e.code == null));
  if (!refused) return null;
  return `the record is outside the scope of source "${source}"'s Partner API key (${e.status} ${e.code ?? ''}: ${e.message})`;
}
