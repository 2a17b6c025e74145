import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import { topicName } from '../kafka/topics.js';
import type { DeadLetterFilters, DeadLetterState } from './dead-letter-filters.js';
import type { DeadLetterInfo } from './dead-letter-headers.js';

/** Prisma is touched only here (and in the guard/audit repositories): callers get plain objects. */

type Tx = Prisma.TransactionClient;

export interface DeadLetter {
  id: number;
  dlqTopic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string;
  headers: Record<string, string>;
  originalTopic: string | null;
  originalPartition: number | null;
  originalOffset: string | null;
  reason: string | null;
  errorCode: string | null;
  errorStatus: number | null;
  errorMessage: string | null;
  commandId: string | null;
  /** With commandId and commandType, the identity of the command the letter holds. */
  commandSource: string | null;
  commandType: string | null;
  partnerRequestIds: string[];
  attempts: number | null;
  consumerGroup: string | null;
  firstFailureAt: Date | null;
  lastFailureAt: Date | null;
  state: DeadLetterState;
  correctedValue: string | null;
  resolvedAt: Date | null;
  resolvedBy: string | null;
  resolution: string | null;
  indexedAt: Date;
}

export interface NewDeadLetter {
  dlqTopic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string;
  headers: Record<string, string>;
  info: Partial<DeadLetterInfo>;
}

type Row = Prisma.DeadLetterGetPayload<object>;

function toDeadLetter(row: Row): DeadLetter {
  return {
    id: Number(row.id),
    dlqTopic: row.dlqTopic,
    partition: row.partition,
    offset: row.offset,
    key: row.key,
    value: row.value,
    headers: (row.headers ?? {}) as Record<string, string>,
    originalTopic: row.originalTopic,
    originalPartition: row.originalPartition,
    originalOffset: row.originalOffset,
    reason: row.reason,
    errorCode: row.errorCode,
    errorStatus: row.errorStatus,
    errorMessage: row.errorMessage,
    commandId: row.commandId,
    commandSource: row.commandSource,
    commandType: row.commandType,
    partnerRequestIds: row.partnerRequestIds,
    attempts: row.attempts,
    consumerGroup: row.consumerGroup,
    firstFailureAt: row.firstFailureAt,
    lastFailureAt: row.lastFailureAt,
    state: row.state as DeadLetterState,
    correctedValue: row.correctedValue,
    resolvedAt: row.resolvedAt,
    resolvedBy: row.resolvedBy,
    resolution: row.resolution,
    indexedAt: row.indexedAt,
  };
}

function toRow(letter: NewDeadLetter): Prisma.DeadLetterCreateManyInput {
  const { info } = letter;
  return {
    dlqTopic: letter.dlqTopic,
    partition: letter.partition,
    offset: letter.offset,
    key: letter.key,
    value: letter.value,
    headers: letter.headers,
    originalTopic: info.originalTopic ?? null,
    originalPartition: info.originalPartition ?? null,
    originalOffset: info.originalOffset ?? null,
    reason: info.reason ?? null,
    errorCode: info.errorCode ?? null,
    errorStatus: info.errorStatus ?? null,
    errorMessage: info.errorMessage ?? null,
    commandId: info.commandId ?? null,
    commandSource: info.commandSource ?? null,
    commandType: info.commandType ?? null,
    partnerRequestIds: info.partnerRequestIds ?? [],
    attempts: info.attempts ?? null,
    consumerGroup: info.consumerGroup ?? null,
    firstFailureAt: info.firstFailureAt ?? null,
    lastFailureAt: info.lastFailureAt ?? null,
  };
}

/**
 * Stores dead letters once per (dlq topic, partition, offset): reading a DLQ again (a
 * rebalance, a reset offset) changes nothing, and never reopens a letter ops already closed.
 * Returns the letters that are new (topic and reason, for the metric).
 */
export async function insertDeadLetters(
  db: Db,
  letters: NewDeadLetter[],
): Promise<Array<{ originalTopic: string | null; dlqTopic: string; reason: string | null }>> {
  if (letters.length === 0) return [];
  return db.deadLetter.createManyAndReturn({
    skipDuplicates: true,
    data: letters.map(toRow),
    select: { originalTopic: true, dlqTopic: true, reason: true },
  });
}

/** One letter; returns whether its row is new. */
export async function insertDeadLetter(db: Db, letter: NewDeadLetter): Promise<boolean> {
  return (await insertDeadLetters(db, [letter])).length === 1;
}

/** A topic filter matches the DLQ topic or the original topic, written with or without the prefix. */
function whereOf(filters: Partial<DeadLetterFilters>, topicPrefix: string): Prisma.DeadLetterWhereInput {
  const and: Prisma.DeadLetterWhereInput[] = [];
  if (filters.topic) {
    const names = [...new Set([filters.topic, topicName(topicPrefix, filters.topic)])];
    and.push({ OR: [{ dlqTopic: { in: names } }, { originalTopic: { in: names } }] });
  }
  if (filters.reason) and.push({ reason: filters.reason });
  if (filters.code) and.push({ errorCode: filters.code });
  if (filters.key) and.push({ key: filters.key });
  if (filters.commandId) and.push({ commandId: filters.commandId });
  if (filters.source !== undefined) and.push({ commandSource: filters.source });
  if (filters.commandType) and.push({ commandType: filters.commandType });
  if (filters.requestId) and.push({ partnerRequestIds: { has: filters.requestId } });
  if (filters.state && filters.state !== 'all') and.push({ state: filters.state });
  if (filters.since || filters.until) {
    const range = {
      ...(filters.since ? { gte: filters.since } : {}),
      ...(filters.until ? { lte: filters.until } : {}),
    };
    and.push(filters.timeField === 'last_failure' ? { lastFailureAt: range } : { indexedAt: range });
  }
  if (filters.search) {
    // Literal text: LIKE's wildcards (and its escape, the backslash) are escaped.
    const contains = { contains: escapeLike(filters.search), mode: 'insensitive' as const };
    and.push({
      OR: [{ value: contains }, { errorMessage: contains }, { key: contains }, { correctedValue: contains }],
    });
  }
  return { AND: and };
}

export interface DeadLetterCounts {
  total: number;
  byReason: Record<string, number>;
  byCode: Record<string, number>;
  /** More letters match than a count reads (DEAD_LETTER_COUNT_CAP): the counts are of the newest ones. */
  capped: boolean;
}

/**
 * The most letters one count reads: a count is a bounded range (the newest matching letters, by
 * id), never a read of every letter ever indexed (issue 42). At the defaults (resolved letters
 * kept 90 days) a large PMS's table holds about 5,000, so the counts are exact; beyond the cap
 * they say "at least".
 */
export const DEAD_LETTER_COUNT_CAP = 10_000;

export async function searchDeadLetters(
  db: Db,
  filters: Partial<DeadLetterFilters>,
  topicPrefix = '',
): Promise<DeadLetter[]> {
  const rows = await db.deadLetter.findMany({
    where: whereOf(filters, topicPrefix),
    orderBy: { id: 'desc' },
    take: filters.limit ?? 100,
  });
  return rows.map(toDeadLetter);
}

/**
 * Counts of the letters the filters match (not only the page), by reason and by error code: of
 * the newest `cap` of them, `capped` when more match.
 */
export async function countDeadLetters(
  db: Db,
  filters: Partial<DeadLetterFilters>,
  topicPrefix = '',
  cap = DEAD_LETTER_COUNT_CAP,
): Promise<DeadLetterCounts> {
  const rows = await db.deadLetter.findMany({
    where: whereOf(filters, topicPrefix),
    orderBy: { id: 'desc' },
    take: cap + 1,
    select: { reason: true, errorCode: true },
  });
  const counts: DeadLetterCounts = { total: 0, byReason: {}, byCode: {}, capped: rows.length > cap };
  for (const row of rows.slice(0, cap)) {
    const reason = row.reason ?? '(none)';
    const code = row.errorCode ?? '(none)';
    counts.total += 1;
    counts.byReason[reason] = (counts.byReason[reason] ?? 0) + 1;
    counts.byCode[code] = (counts.byCode[code] ?? 0) + 1;
  }
  return counts;
}

export async function getDeadLetter(db: Db | Tx, id: number): Promise<DeadLetter | null> {
  const row = await db.deadLetter.findUnique({ where: { id: BigInt(id) } });
  return row ? toDeadLetter(row) : null;
}

/** Reads a letter and locks its row until the transaction ends: two redrives of one letter queue up. */
export async function lockDeadLetter(tx: Tx, id: number): Promise<DeadLetter | null> {
  const locked = await tx.$queryRaw<
    { id: bigint }[]
  >`SELECT id FROM dead_letters WHERE id = ${BigInt(id)} FOR UPDATE`;
  return locked.length === 0 ? null : getDeadLetter(tx, id);
}

export async function resolveDeadLetter(
  tx: Db | Tx,
  id: number,
  change: { state: DeadLetterState; by: string; resolution: string; correctedValue?: string | null },
): Promise<DeadLetter> {
  const row = await tx.deadLetter.update({
    where: { id: BigInt(id) },
    data: {
      state: change.state,
      // Reopened (a failed redrive): not resolved, but who tried and why it failed stay.
      resolvedAt: change.state === 'open' ? null : new Date(),
      resolvedBy: change.by,
      resolution: change.resolution,
      ...(change.correctedValue !== undefined ? { correctedValue: change.correctedValue } : {}),
    },
  });
  return toDeadLetter(row);
}

/** Ids of every letter the filters match (for `dlq redrive --where`), oldest first. */
export async function findDeadLetterIds(
  db: Db,
  filters: Partial<DeadLetterFilters>,
  topicPrefix = '',
): Promise<number[]> {
  const rows = await db.deadLetter.findMany({
    where: whereOf(filters, topicPrefix),
    orderBy: { id: 'asc' },
    take: filters.limit ?? 100,
    select: { id: true },
  });
  return rows.map((r) => Number(r.id));
}

/** `%`, `_` and `\` taken literally in a LIKE pattern (PostgreSQL's default escape is `\`). */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
