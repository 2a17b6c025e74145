import type { CommandAttemptView } from '../dead-letters/guard-state-repository.js';

/** The rows a trace is built from (src/event-trace/trace-repository.ts reads them), and their ids. */

export interface ReceiptRow {
  source: string;
  webhookId: string;
  eventType: string;
  receivedAt: Date;
  outboxId: string | null;
}
export interface OutboxRow {
  id: string;
  eventId: string;
  /** The CloudEvent source: of a command, its identity's source (commandSourceOf). */
  source: string;
  topic: string;
  key: string;
  type: string;
  subject: string | null;
  headers: Record<string, string>;
  createdAt: Date;
  publishedAt: Date | null;
  attempts: number;
  lastError: string | null;
  /** Where the relay's publish landed (null for rows published before positions were kept). */
  kafkaPartition: number | null;
  kafkaOffset: string | null;
}
export interface CommandRow {
  source: string;
  commandId: string;
  commandType: string;
  requestIdBase: string;
  targetId: string;
  state: string;
  attempts: number;
  lastError: unknown;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}
export interface AttemptRow extends CommandAttemptView {
  source: string;
  commandType: string;
  commandId: string;
}
export interface DeadLetterRow {
  id: string;
  dlqTopic: string;
  originalTopic: string | null;
  originalPartition: number | null;
  originalOffset: string | null;
  key: string | null;
  reason: string | null;
  errorCode: string | null;
  errorStatus: number | null;
  errorMessage: string | null;
  commandId: string | null;
  commandSource: string | null;
  commandType: string | null;
  partnerRequestIds: string[];
  headers: Record<string, string>;
  state: string;
  indexedAt: Date;
  resolvedAt: Date | null;
  resolvedBy: string | null;
  resolution: string | null;
}
export interface VersionRow {
  resource: string;
  recordId: string;
  updatedAt: string;
  via: string;
  publishedAt: Date;
}
export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  action: string;
  target: string;
  reason: string | null;
  details: Record<string, unknown>;
}

/** The kinds of id a trace can start from; an id may match more than one (dead letter 1, record 1). */
export const ID_KINDS = ['webhook', 'event', 'command', 'request', 'record', 'dead-letter'] as const;
export type IdKind = (typeof ID_KINDS)[number];

export interface TraceRows {
  /** The kinds of id the looked-up id matched (before any `as`), in ID_KINDS order. */
  matchedAs: IdKind[];
  receipts: ReceiptRow[];
  outbox: OutboxRow[];
  commands: CommandRow[];
  attempts: AttemptRow[];
  deadLetters: DeadLetterRow[];
  versions: VersionRow[];
  audit: AuditRow[];
  /** Outbox ids a receipt points at: those missing from `outbox` were pruned. */
  outboxIdsNamed: string[];
}

/** A command's identity as one string, for sets and maps (the unit separator is in no id). */
export function identityKey(c: { source: string; commandType: string; commandId: string }): string {
  return `${c.source}\u001f${c.commandType}\u001f${c.commandId}`;
}

/** Narrows a trace to the commands of one source and/or type (`trace 42 --source acme`). */
export interface TraceScope {
  source?: string;
  commandType?: string;
}
