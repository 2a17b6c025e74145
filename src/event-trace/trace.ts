import type { Db } from '../db/prisma.js';
import { logicalTopic } from '../kafka/topics.js';
import { escapeId } from '../contracts/command-contracts.js';
import {
  identityKey,
  readTraceRows,
  type IdKind,
  type TraceRows,
  type TraceScope,
} from './trace-repository.js';
import {
  COMMAND_TOPIC_NAMES,
  STAGE_ORDER,
  commandSteps,
  letterSteps,
  named,
  outboxSteps,
  outcomeSteps,
  receiptSteps,
  type Timeline,
  type TraceStep,
} from './trace-steps.js';

export { ID_KINDS, type IdKind } from './trace-repository.js';
export type { TraceStage, TraceStep } from './trace-steps.js';

/**
 * `rentbridge trace <id>` and the console's trace view: the life of one event as a timeline, from
 * what PostgreSQL holds, and where that trail ends. Any id works: webhook id, CloudEvent id,
 * command id (the field its type declares, src/command-types/command-types.ts), Partner request id
 * (`<commandId>.a<n>`), record id, dead-letter id.
 */

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
  /** The kinds of id `id` matched; more than one: `as` picks one. */
  matchedAs: IdKind[];
  /** The kind the user picked, when one was. */
  as: IdKind | null;
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
  /** Follow the id only as this kind of id. */
  as?: IdKind;
  /** OUTBOX_RETENTION_HOURS, to say why an outbox row is gone. */
  retentionHours: number;
}

export function buildTimeline(id: string, rows: TraceRows, options: TraceOptions): Trace {
  const timeline: Timeline = {
    steps: [],
    ends: [],
    logical: (t: string) => logicalTopic(options.topicPrefix, t),
    topicPrefix: options.topicPrefix,
    retentionHours: options.retentionHours,
  };
  receiptSteps(timeline, rows);
  outboxSteps(timeline, rows);
  commandSteps(timeline, rows);
  outcomeSteps(timeline, rows);
  letterSteps(timeline, rows);
  const { steps, ends } = timeline;
  steps.sort((a, b) => a.at.localeCompare(b.at) || STAGE_ORDER[a.stage] - STAGE_ORDER[b.stage]);
  const found = steps.length > 0;
  if (!found) {
    ends.push(
      `no trace of "${id}" in PostgreSQL: not an id rentbridge has seen, or older than what it keeps (outbox rows: OUTBOX_RETENTION_HOURS = ${options.retentionHours} h). A webhook the receiver refused is never stored: its request id is in the receiver's "webhook refused" log line (with the reason) and, for an hour, in the console's trace on the process that refused it`,
    );
  }
  if (rows.matchedAs.length > 1 && !options.as) {
    ends.unshift(
      `"${id}" matched more than one kind of id (${rows.matchedAs.map((k) => ID_KIND_NAMES[k]).join(', ')}): the steps of all are shown; pick one to see only its trail (rentbridge trace ${id} --as <${rows.matchedAs.join('|')}>)`,
    );
  }
  return { id, matchedAs: rows.matchedAs, as: options.as ?? null, found, steps, ends };
}

/** How each kind of id is named to a person. */
export const ID_KIND_NAMES: Record<IdKind, string> = {
  webhook: 'webhook id',
  event: 'CloudEvent id',
  command: 'command id',
  request: 'Partner request id',
  record: 'record id',
  'dead-letter': 'dead-letter id',
};

export async function traceId(db: Db, id: string, options: TraceOptions): Promise<Trace> {
  const trimmed = id.trim();
  const scope: TraceScope = {
    ...(options.source !== undefined && { source: options.source }),
    ...(options.commandType !== undefined && { commandType: options.commandType }),
  };
  // The outbox keeps logical topic names; the relay adds KAFKA_TOPIC_PREFIX when it publishes.
  const rows = await readTraceRows(db, trimmed, [...COMMAND_TOPIC_NAMES], scope, options.as);
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
      matchedAs: rows.matchedAs,
      as: options.as ?? null,
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
