import type { IdKind, TraceScope } from './trace-repository.js';

/** What `rentbridge trace <id>` and the console's trace view answer (src/trace/trace.ts). */

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
