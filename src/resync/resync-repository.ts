import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import { tombstone } from '../changes/record-changes.js';
import { TOPICS } from '../kafka/topics.js';
import { insertOutboxRows, type OutboxMessageInput } from '../outbox/outbox-repository.js';
import { notifyRelay } from '../outbox/relay-waker.js';
import type { Resource } from '../partner/resources.js';
import { stateChangeType, type StateChange } from '../contracts/state-change.js';
import { withoutErased } from '../privacy/erased-records.js';

/** The resync's reads and writes of PostgreSQL: its position per resource and its outbox rows. */

const TX_OPTIONS = { timeout: 120_000, maxWait: 30_000 } as const;

export interface ResyncPositionRow {
  pagesDone: number;
  records: number;
  finished: boolean;
}

/** Where an unfinished resync of the resource stopped, or null (none, or the last one finished). */
export async function readPosition(db: Db, resource: Resource): Promise<ResyncPositionRow | null> {
  const row = await db.resyncPosition.findUnique({ where: { resource } });
  if (!row || row.finishedAt) return null;
  return { pagesDone: row.pagesDone, records: row.records, finished: false };
}

/** Starts a pass from the first page (a finished or restarted one is forgotten). */
export async function resetPosition(db: Db, resource: Resource): Promise<void> {
  const data = { pagesDone: 0, records: 0, startedAt: new Date(), updatedAt: new Date(), finishedAt: null };
  await db.resyncPosition.upsert({ where: { resource }, create: { resource, ...data }, update: data });
}

/**
 * One page's records as resync events (`partner.<x>.updated`, data.via `resync`) and the new
 * position, in one transaction: a resync stopped anywhere resumes after the last page written.
 * The dedupe of changes is not touched: a resync republishes what was published before.
 */
export async function writeResyncPage(
  db: Db,
  resource: Resource,
  page: (Record<string, unknown> & { id: string; updated_at: string })[],
  position: { pagesDone: number; records: number },
): Promise<void> {
  const source = `/resync/${resource}`;
  // A record erased on request is not republished (counted, not named) while the platform holds it.
  const records = await withoutErased(db, page, (r) => ({ resource, id: r.id }), 'resync');
  const messages: OutboxMessageInput[] = records.map((record) => {
    const data: StateChange = {
      resource,
      id: record.id,
      updated_at: record.updated_at,
      record: { ...record, id: record.id },
      // Not a change: the record's current state again.
      previous_status: null,
      via: 'resync',
      removed: false,
    };
    return {
      topic: TOPICS.partner(resource),
      key: record.id,
      type: stateChangeType(resource, false),
      source,
      subject: record.id,
      data: data as unknown as Prisma.InputJsonValue,
    };
  });
  await db.$transaction(async (tx) => {
    await insertOutboxRows(tx, messages);
    await tx.resyncPosition.update({
      where: { resource },
      data: { pagesDone: position.pagesDone, records: position.records, updatedAt: new Date() },
    });
  }, TX_OPTIONS);
  if (messages.length > 0) await notifyRelay(db).catch(() => undefined);
}

/**
 * Ends the pass: a tombstone for every record rentbridge saw removed (a changelog that was lost or
 * truncated may still hold it downstream), and the position marked finished. Answers the tombstones.
 */
export async function finishResync(db: Db, resource: Resource): Promise<number> {
  const removed = await db.knownRecord.findMany({
    where: { resource, removedAt: { not: null } },
    select: { recordId: true },
    orderBy: { recordId: 'asc' },
  });
  const source = `/resync/${resource}`;
  const rows = removed.map((r) =>
    tombstone({ topic: TOPICS.partner(resource), key: r.recordId, type: '', source, data: {} }),
  );
  await db.$transaction(async (tx) => {
    for (let i = 0; i < rows.length; i += 1000) await insertOutboxRows(tx, rows.slice(i, i + 1000));
    await tx.resyncPosition.update({
      where: { resource },
      data: { finishedAt: new Date(), updatedAt: new Date() },
    });
  }, TX_OPTIONS);
  if (rows.length > 0) await notifyRelay(db).catch(() => undefined);
  return rows.length;
}
