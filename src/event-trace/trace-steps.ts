import {
  commandContracts,
  contractOfKind,
  contractOfTopic,
  commandSourceOf,
  describeIdentity,
  escapeId,
} from '../contracts/command-contracts.js';
import { TOPICS } from '../kafka/topics.js';
import { outcomeEventId, type CommandKind } from '../contracts/outcomes.js';
import { identityKey, type AttemptRow, type TraceRows } from './trace-rows.js';
import { commandTargets, targetSuffix } from './trace-targets.js';

/**
 * The steps of a trace's timeline, by kind of row, and the sentences that say where its trail
 * ends (src/event-trace/trace.ts puts them in order).
 */

export type TraceStage =
  | 'webhook'
  | 'outbox'
  | 'published'
  | 'version'
  | 'command'
  | 'snapshot'
  | 'attempt'
  | 'read-back'
  | 'wait'
  | 'outcome'
  | 'dead-letter'
  | 'audit';

export interface TraceStep {
  /** ISO time. */
  at: string;
  stage: TraceStage;
  /** One line: what happened. */
  what: string;
  /** The ids and facts behind it. */
  details: Record<string, string | number | null>;
}

/** What each builder adds to: the steps, and the plain sentences of where the trail ends. */
export interface Timeline {
  steps: TraceStep[];
  ends: string[];
  /** The topic as the outbox keeps it, without KAFKA_TOPIC_PREFIX. */
  logical: (topic: string) => string;
  topicPrefix: string;
  retentionHours: number;
}

export const iso = (d: Date) => d.toISOString();

/** The command topics (logical names): one per entry of the list of command types. */
export const COMMAND_TOPIC_NAMES: readonly string[] = commandContracts().map((c) => c.topic);

/** The outcome topic a command's final state is published on (not kept in PostgreSQL). */
export function outcomeTopicOf(commandType: string): string {
  return contractOfKind(commandType)?.outcomeTopic ?? TOPICS.applicationDecisionOutcomes;
}

export const named = (c: { source: string; commandType: string; commandId: string }) =>
  describeIdentity({ ...c, commandType: c.commandType as CommandKind });

function errorSummary(e: unknown): string | null {
  if (!e || typeof e !== 'object') return null;
  const o = e as Record<string, unknown>;
  return [o.code, o.status, o.message].filter((x) => x != null && x !== '').join(' · ') || null;
}

/** A guard step (`command_attempts` row) as the timeline shows it. */
function guardStep(a: AttemptRow): { stage: TraceStage; what: string } {
  const ms = a.finishedAt ? Math.max(0, a.finishedAt.getTime() - a.startedAt.getTime()) : null;
  switch (a.kind) {
    case 'snapshot':
      return {
        stage: 'snapshot',
        what: `snapshot read before the write (${a.requestId}): ${a.message ?? a.result ?? 'no answer recorded'}`,
      };
    case 'read_back':
      return {
        stage: 'read-back',
        what: `read-back after write #${a.attempt} (${a.requestId}) → ${a.result ?? 'no verdict'}${a.message ? `: ${a.message}` : ''}`,
      };
    case 'wait':
      return {
        stage: 'wait',
        what: `waited ${ms == null ? '' : ms >= 2000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`}: ${a.message ?? 'no reason recorded'}`,
      };
    default: {
      const answer = [a.result, a.status, a.code].filter((x) => x != null).join(' ') || 'no answer recorded';
      return { stage: 'attempt', what: `${a.kind} #${a.attempt} (${a.requestId}) → ${answer}` };
    }
  }
}

/** Webhook receipts, and what a receipt that published nothing says. */
export function receiptSteps(t: Timeline, rows: TraceRows): void {
  for (const r of rows.receipts) {
    t.steps.push({
      at: iso(r.receivedAt),
      stage: 'webhook',
      what: `webhook ${r.eventType} received from ${r.source}, signature verified`,
      details: { source: r.source, webhookId: r.webhookId, eventType: r.eventType, outboxId: r.outboxId },
    });
  }
  const outboxIds = new Set(rows.outbox.map((o) => o.id));
  for (const missing of rows.outboxIdsNamed.filter((o) => !outboxIds.has(o))) {
    t.ends.push(
      `outbox row ${missing} is gone: published rows are pruned after OUTBOX_RETENTION_HOURS (${t.retentionHours} h), so what followed is not in PostgreSQL (the Kafka topic may still hold it)`,
    );
  }
  for (const r of rows.receipts.filter((x) => x.outboxId == null)) {
    // A customer-token request's receipt (decision 026) is its one-use mark: it publishes nothing.
    if (r.source.startsWith('pms-token:'))
      t.ends.push(`webhook ${r.webhookId} was a customer-token request: answered at once, nothing published`);
    else
      t.ends.push(
        `webhook ${r.webhookId} published nothing: the change it carried had already been published`,
      );
  }
}

/** Outbox rows, their publish (where it landed on Kafka), and the versions claimed. */
export function outboxSteps(t: Timeline, rows: TraceRows): void {
  const { logical } = t;
  for (const o of rows.outbox) {
    t.steps.push({
      at: iso(o.createdAt),
      stage: 'outbox',
      what: `stored in the outbox for ${logical(o.topic)}`,
      details: { outboxId: o.id, eventId: o.eventId, type: o.type, key: o.key, subject: o.subject },
    });
    if (o.publishedAt) {
      const where = o.kafkaPartition != null ? ` partition ${o.kafkaPartition} offset ${o.kafkaOffset}` : '';
      t.steps.push({
        at: iso(o.publishedAt),
        stage: 'published',
        what: `published to Kafka ${logical(o.topic)}${where} (key ${o.key})`,
        details: {
          topic: logical(o.topic),
          // The topic as a Kafka tool names it (with KAFKA_TOPIC_PREFIX), and where the message is.
          kafkaTopic: `${t.topicPrefix}${o.topic}`,
          partition: o.kafkaPartition,
          offset: o.kafkaOffset,
          eventId: o.eventId,
          lagMs: o.publishedAt.getTime() - o.createdAt.getTime(),
          attempts: o.attempts,
        },
      });
      if (o.topic === TOPICS.unrouted) {
        const type = rows.receipts.find((r) => r.outboxId === o.id)?.eventType;
        t.ends.push(
          `unknown type: kept on inbound.unrouted, nothing consumes it${type ? ` (the sender's type was "${escapeId(type)}")` : ''}`,
        );
      }
    } else {
      t.ends.push(
        `event ${o.eventId} waits in the outbox, not yet published${o.lastError ? ` (last error: ${o.lastError})` : ''}`,
      );
    }
  }
  for (const v of rows.versions) {
    t.steps.push({
      at: iso(v.publishedAt),
      stage: 'version',
      what: `version ${v.updatedAt} of ${v.resource} ${v.recordId} claimed via ${v.via}`,
      details: { resource: v.resource, recordId: v.recordId, updatedAt: v.updatedAt, via: v.via },
    });
  }
}

/** Commands taken by the guard (or published and not yet consumed), and every guard step. */
export function commandSteps(t: Timeline, rows: TraceRows): void {
  const { logical } = t;
  const commandTopics = new Set<string>(COMMAND_TOPIC_NAMES);
  // By identity: acme's decision 42 having a row says nothing of acme's payment 42.
  const commandKeys = new Set(rows.commands.map(identityKey));
  for (const o of rows.outbox.filter((x) => commandTopics.has(x.topic) && x.publishedAt)) {
    const source = commandSourceOf(o.source);
    const commandType = contractOfTopic(o.topic)?.kind ?? '';
    const identity = { source, commandType, commandId: o.subject ?? '' };
    if (
      o.subject &&
      !commandKeys.has(identityKey(identity)) &&
      !rows.deadLetters.some(
        (l) =>
          l.commandId === o.subject &&
          (l.commandSource == null || l.commandSource === source) &&
          (l.commandType == null || l.commandType === commandType),
      )
    ) {
      t.ends.push(
        `command "${escapeId(o.subject)}" from ${escapeId(source)} was published to ${logical(o.topic)} but has no guard row: not consumed yet (consumer behind or not running)`,
      );
    }
  }
  // Each attempt under the target it had: a corrected redrive changes it (trace-targets.ts).
  const targets = new Map(rows.commands.map((c) => [identityKey(c), commandTargets(c, rows.audit)]));
  for (const c of rows.commands) {
    const had = targets.get(identityKey(c))!;
    t.steps.push({
      at: iso(c.createdAt),
      stage: 'command',
      what: `command ${named(c)} taken by the guard for ${escapeId(had.first)}`,
      details: {
        source: c.source,
        commandId: c.commandId,
        commandType: c.commandType,
        targetId: had.first,
        requestIdBase: c.requestIdBase,
      },
    });
    for (const change of had.changes)
      t.steps.push({
        at: iso(change.at),
        stage: 'command',
        what: `command ${named(c)} corrected by ${change.actor} (${change.letter}): target ${escapeId(change.from)} → ${escapeId(change.to)}`,
        details: { commandId: c.commandId, from: change.from, to: change.to, actor: change.actor },
      });
  }
  for (const a of rows.attempts) {
    if (a.kind === 'outcome') continue;
    const step = guardStep(a);
    const had = targets.get(identityKey(a));
    t.steps.push({
      at: iso(a.startedAt),
      stage: step.stage,
      what: step.what + (had ? targetSuffix(had, a.startedAt) : ''),
      details: {
        targetId: had?.at(a.startedAt) ?? null,
        source: a.source,
        commandId: a.commandId,
        requestId: a.requestId,
        kind: a.kind,
        status: a.status,
        code: a.code,
        result: a.result,
        message: a.message,
        ms: a.finishedAt ? Math.max(0, a.finishedAt.getTime() - a.startedAt.getTime()) : null,
      },
    });
  }
}

/** Each finished command's outcome (and where it landed on Kafka), or where an open one stands. */
export function outcomeSteps(t: Timeline, rows: TraceRows): void {
  // Where the outcome landed: shown on the outcome step (the last publish wins: a republish).
  const outcomePositions = new Map<string, string>();
  for (const a of rows.attempts) {
    if (a.kind === 'outcome' && a.message) outcomePositions.set(identityKey(a), a.message);
  }
  for (const c of rows.commands) {
    if (c.finishedAt) {
      const where = outcomePositions.get(identityKey(c));
      t.steps.push({
        at: iso(c.finishedAt),
        stage: 'outcome',
        what: `command ${c.state}; outcome ${escapeId(outcomeEventId(c.requestIdBase, c.state))} published to ${where ?? outcomeTopicOf(c.commandType)}`,
        details: {
          source: c.source,
          commandId: c.commandId,
          // The outcome's CloudEvent id (and its callback's webhook-id): it names the result.
          outcomeId: outcomeEventId(c.requestIdBase, c.state),
          state: c.state,
          attempts: c.attempts,
          error: errorSummary(c.lastError),
          // `<topic>[<partition>]@<offset>` (logical topic; Kafka's name has KAFKA_TOPIC_PREFIX in front).
          kafka: where ?? null,
        },
      });
      t.ends.push(
        `command ${named(c)} ended ${c.state} at ${iso(c.finishedAt)}; its outcome message is on Kafka (${outcomeTopicOf(c.commandType)}), not kept in PostgreSQL`,
      );
    } else {
      t.ends.push(
        `command ${named(c)} is ${c.state} (${c.attempts} attempts), last change ${iso(c.updatedAt)}`,
      );
    }
  }
}

/** Dead letters and what the operators did about them. */
export function letterSteps(t: Timeline, rows: TraceRows): void {
  const { logical } = t;
  for (const l of rows.deadLetters) {
    t.steps.push({
      at: iso(l.indexedAt),
      stage: 'dead-letter',
      what: `dead letter #${l.id} (${l.reason ?? 'no reason'}) from ${l.originalTopic ? logical(l.originalTopic) : logical(l.dlqTopic)}`,
      details: {
        deadLetterId: l.id,
        reason: l.reason,
        error: [l.errorCode, l.errorStatus, l.errorMessage].filter((x) => x != null).join(' · ') || null,
        original: l.originalTopic
          ? `${logical(l.originalTopic)}[${l.originalPartition}]@${l.originalOffset}`
          : null,
        requestIds: l.partnerRequestIds.join(', ') || null,
        state: l.state,
      },
    });
    if (l.state === 'open')
      t.ends.push(`dead letter #${l.id} is open: it waits for an operator (console or rentbridge dlq)`);
  }
  for (const a of rows.audit) {
    t.steps.push({
      at: iso(a.at),
      stage: 'audit',
      what: `${a.action} by ${a.actor}${a.reason ? `: ${a.reason}` : ''}`,
      details: { target: a.target, actor: a.actor, action: a.action, reason: a.reason },
    });
  }
}

/** Same-time steps in the order they happen. */
export const STAGE_ORDER: Record<TraceStage, number> = {
  webhook: 0,
  version: 1,
  outbox: 2,
  published: 3,
  snapshot: 4,
  command: 5,
  attempt: 6,
  wait: 7,
  'read-back': 8,
  outcome: 9,
  'dead-letter': 10,
  audit: 11,
};
