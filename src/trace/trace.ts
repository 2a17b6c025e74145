import type { Db } from '../db/prisma.js';
import { COMMAND_TOPICS, TOPICS, logicalTopic } from '../kafka/topics.js';
import { commandSourceOf, describeIdentity, escapeId } from '../events/command-identity.js';
import type { CommandKind } from '../events/outcomes.js';
import { identityKey, readTraceRows, type TraceRows, type TraceScope } from './trace-repository.js';

/**
 * `rentbridge trace <id>` and the console's trace view: the life of one event as a timeline, from
 * what PostgreSQL holds, and where that trail ends. Any id works: webhook id, CloudEvent id,
 * command id (decision_id, payment_id), Partner request id (`<commandId>.a<n>`), record id,
 * dead-letter id.
 */

export type TraceStage =
  | 'webhook'
  | 'outbox'
  | 'published'
  | 'version'
  | 'command'
  | 'attempt'
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

/** A command an id names, when it names several (`trace 42` with acme's decision 42 and payment 42). */
export interface TraceCandidate {
  source: string;
  commandType: string;
  commandId: string;
  targetId: string;
  state: string;
  /** Its request ids start with this: `trace <base>.a1` names it alone. */
  requestIdBase: string;
}

export interface Trace {
  id: string;
  found: boolean;
  /**
   * Set when the id is the own id of several commands (of other sources or types) and no scope
   * says which: the trace lists them instead of mixing their trails.
   */
  candidates?: TraceCandidate[];
  steps: TraceStep[];
  /** Plain sentences: where the trail ends, and why it may end there. */
  ends: string[];
}

export interface TraceOptions extends TraceScope {
  topicPrefix: string;
  /** OUTBOX_RETENTION_HOURS, to say why an outbox row is gone. */
  retentionHours: number;
}

const iso = (d: Date) => d.toISOString();

/** The outcome topic a command's final state is published on (not kept in PostgreSQL). */
function outcomeTopicOf(commandType: string): string {
  switch (commandType) {
    case 'rental_payment':
      return TOPICS.rentalPaymentOutcomes;
    case 'customer_registration':
      return TOPICS.customerRegistrationOutcomes;
    case 'enrollment':
      return TOPICS.enrollmentOutcomes;
    default:
      return TOPICS.applicationDecisionOutcomes;
  }
}

const named = (c: { source: string; commandType: string; commandId: string }) =>
  describeIdentity({ ...c, commandType: c.commandType as CommandKind });

function errorSummary(e: unknown): string | null {
  if (!e || typeof e !== 'object') return null;
  const o = e as Record<string, unknown>;
  return [o.code, o.status, o.message].filter((x) => x != null && x !== '').join(' · ') || null;
}

export function buildTimeline(id: string, rows: TraceRows, options: TraceOptions): Trace {
  const steps: TraceStep[] = [];
  const ends: string[] = [];
  const logical = (t: string) => logicalTopic(options.topicPrefix, t);
  const commandTopics = new Set<string>(COMMAND_TOPICS);

  for (const r of rows.receipts) {
    steps.push({
      at: iso(r.receivedAt),
      stage: 'webhook',
      what: `webhook ${r.eventType} received from ${r.source}, signature verified`,
      details: { source: r.source, webhookId: r.webhookId, eventType: r.eventType, outboxId: r.outboxId },
    });
  }
  const outboxIds = new Set(rows.outbox.map((o) => o.id));
  for (const missing of rows.outboxIdsNamed.filter((o) => !outboxIds.has(o))) {
    ends.push(
      `outbox row ${missing} is gone: published rows are pruned after OUTBOX_RETENTION_HOURS (${options.retentionHours} h), so what followed is not in PostgreSQL (the Kafka topic may still hold it)`,
    );
  }
  for (const r of rows.receipts.filter((x) => x.outboxId == null)) {
    // A customer-token request's receipt (decision 026) is its one-use mark: it publishes nothing.
    if (r.source.startsWith('pms-token:'))
      ends.push(`webhook ${r.webhookId} was a customer-token request: answered at once, nothing published`);
    else
      ends.push(`webhook ${r.webhookId} published nothing: the change it carried had already been published`);
  }
  for (const o of rows.outbox) {
    steps.push({
      at: iso(o.createdAt),
      stage: 'outbox',
      what: `stored in the outbox for ${logical(o.topic)}`,
      details: { outboxId: o.id, eventId: o.eventId, type: o.type, key: o.key, subject: o.subject },
    });
    if (o.publishedAt) {
      steps.push({
        at: iso(o.publishedAt),
        stage: 'published',
        what: `published to Kafka ${logical(o.topic)} (key ${o.key})`,
        details: {
          topic: logical(o.topic),
          eventId: o.eventId,
          lagMs: o.publishedAt.getTime() - o.createdAt.getTime(),
          attempts: o.attempts,
        },
      });
    } else {
      ends.push(
        `event ${o.eventId} waits in the outbox, not yet published${o.lastError ? ` (last error: ${o.lastError})` : ''}`,
      );
    }
  }
  for (const v of rows.versions) {
    steps.push({
      at: iso(v.publishedAt),
      stage: 'version',
      what: `version ${v.updatedAt} of ${v.resource} ${v.recordId} claimed via ${v.via}`,
      details: { resource: v.resource, recordId: v.recordId, updatedAt: v.updatedAt, via: v.via },
    });
  }
  const commandKeys = new Set(rows.commands.map((c) => `${c.source}\u001f${c.commandId}`));
  for (const o of rows.outbox.filter((x) => commandTopics.has(x.topic) && x.publishedAt)) {
    const source = commandSourceOf(o.source);
    if (
      o.subject &&
      !commandKeys.has(`${source}\u001f${o.subject}`) &&
      !rows.deadLetters.some((l) => l.commandId === o.subject)
    ) {
      ends.push(
        `command "${escapeId(o.subject)}" from ${escapeId(source)} was published to ${logical(o.topic)} but has no guard row: not consumed yet (consumer behind or not running)`,
      );
    }
  }
  for (const c of rows.commands) {
    steps.push({
      at: iso(c.createdAt),
      stage: 'command',
      what: `command ${named(c)} taken by the guard for ${escapeId(c.targetId)}`,
      details: {
        source: c.source,
        commandId: c.commandId,
        commandType: c.commandType,
        targetId: c.targetId,
        requestIdBase: c.requestIdBase,
      },
    });
  }
  for (const a of rows.attempts) {
    const answer = [a.result, a.status, a.code].filter((x) => x != null).join(' ') || 'no answer recorded';
    steps.push({
      at: iso(a.startedAt),
      stage: 'attempt',
      what: `${a.kind} #${a.attempt} → ${answer}`,
      details: {
        source: a.source,
        commandId: a.commandId,
        requestId: a.requestId,
        kind: a.kind,
        status: a.status,
        code: a.code,
        message: a.message,
        ms: a.finishedAt ? a.finishedAt.getTime() - a.startedAt.getTime() : null,
      },
    });
  }
  for (const c of rows.commands) {
    if (c.finishedAt) {
      steps.push({
        at: iso(c.finishedAt),
        stage: 'outcome',
        what: `command ${c.state}; outcome published to ${outcomeTopicOf(c.commandType)}`,
        details: {
          source: c.source,
          commandId: c.commandId,
          state: c.state,
          attempts: c.attempts,
          error: errorSummary(c.lastError),
        },
      });
      ends.push(
        `command ${named(c)} ended ${c.state} at ${iso(c.finishedAt)}; its outcome message is on Kafka (${outcomeTopicOf(c.commandType)}), not kept in PostgreSQL`,
      );
    } else {
      ends.push(
        `command ${named(c)} is ${c.state} (${c.attempts} attempts), last change ${iso(c.updatedAt)}`,
      );
    }
  }
  for (const l of rows.deadLetters) {
    steps.push({
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
      ends.push(`dead letter #${l.id} is open: it waits for an operator (console or rentbridge dlq)`);
  }
  for (const a of rows.audit) {
    steps.push({
      at: iso(a.at),
      stage: 'audit',
      what: `${a.action} by ${a.actor}${a.reason ? `: ${a.reason}` : ''}`,
      details: { target: a.target, actor: a.actor, action: a.action, reason: a.reason },
    });
  }
  const order: Record<TraceStage, number> = {
    webhook: 0,
    version: 1,
    outbox: 2,
    published: 3,
    command: 4,
    attempt: 5,
    outcome: 6,
    'dead-letter': 7,
    audit: 8,
  };
  steps.sort((a, b) => a.at.localeCompare(b.at) || order[a.stage] - order[b.stage]);
  const found = steps.length > 0;
  if (!found) {
    ends.push(
      `no trace of "${id}" in PostgreSQL: not an id rentbridge has seen, or older than what it keeps (outbox rows: OUTBOX_RETENTION_HOURS = ${options.retentionHours} h)`,
    );
  }
  return { id, found, steps, ends };
}

export async function traceId(db: Db, id: string, options: TraceOptions): Promise<Trace> {
  const trimmed = id.trim();
  const scope: TraceScope = {
    ...(options.source !== undefined && { source: options.source }),
    ...(options.commandType !== undefined && { commandType: options.commandType }),
  };
  // The outbox keeps logical topic names; the relay adds KAFKA_TOPIC_PREFIX when it publishes.
  const rows = await readTraceRows(db, trimmed, [...COMMAND_TOPICS], scope);
  // A command's own id names it alone only when one command has it: else list them.
  const own = new Map(rows.commands.filter((c) => c.commandId === trimmed).map((c) => [identityKey(c), c]));
  if (own.size > 1) {
    const candidates = [...own.values()].map((c) => ({
      source: c.source,
      commandType: c.commandType,
      commandId: c.commandId,
      targetId: c.targetId,
      state: c.state,
      requestIdBase: c.requestIdBase,
    }));
    return {
      id: trimmed,
      found: true,
      candidates,
      steps: [],
      ends: [
        `"${escapeId(trimmed)}" is the id of ${candidates.length} commands (two commands that share an id are two commands); trace one with --source and/or --type, or by its request id:`,
        ...candidates.map(
          (c) =>
            `${named(c)} → ${escapeId(c.targetId)}, ${c.state}: rentbridge trace ${c.requestIdBase}.a1, or --source ${JSON.stringify(c.source)} --type ${c.commandType}`,
        ),
      ],
    };
  }
  return buildTimeline(trimmed, rows, options);
}
