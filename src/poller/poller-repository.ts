import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import { recordChanges } from '../changes/record-changes.js';
import { notifyRelay } from '../outbox/relay-waker.js';
import type { Resource } from '../partner/resources.js';
import { activeTraceHeaders } from '../telemetry.js';
import { recordPolledChanges } from './batch-state-changes.js';

/** The poller's reads and writes of PostgreSQL: cursors, changes (through the shared dedupe), removals. */

/** Generous: a page of 1,000 new records is a few thousand statements. */
const TX_OPTIONS = { timeout: 120_000, maxWait: 30_000 } as const;

export interface PassStats {
  pages: number;
  /** Pages the collection had when the pass began (page_count of the first page). */
  pageCount: number;
  records: number;
  changes: number;
  removed: number;
  requests: number;
  elapsedMs: number;
  /** The date filter the pass used, when it used one. */
  fromDate?: string | null;
}

export async function readFromDate(db: Db, resource: Resource): Promise<string | null> {
  const row = await db.pollerCursor.findUnique({ where: { resource }, select: { fromDate: true } });
  return row?.fromDate ?? null;
}

/** The database's clock: what `seen_at` in known_records is written with. */
export async function databaseNow(db: Db): Promise<Date> {
  const [row] = await db.$queryRaw<{ now: Date }[]>`SELECT now() AS now`;
  return row?.now ?? new Date();
}

export async function markStarted(
  db: Db,
  resource: Resource,
  at: Date,
  staleAfterSeconds: number,
): Promise<void> {
  const data = { lastStartedAt: at, passPages: 0, passPageCount: null, lastPageAt: null, staleAfterSeconds };
  await db.pollerCursor.upsert({ where: { resource }, create: { resource, ...data }, update: data });
}

/**
 * The progress of the pass under way, after each page (a request per customer for issues): what
 * tells a long pass whose pages keep arriving from a stalled one (src/poller/pass-staleness.ts).
 */
export async function markPage(
  db: Db,
  resource: Resource,
  page: { pages: number; pageCount: number; at: Date },
): Promise<void> {
  await db.pollerCursor.update({
    where: { resource },
    data: { passPages: page.pages, passPageCount: page.pageCount || null, lastPageAt: page.at },
  });
}

/**
 * Moves the cursor: called only once the whole pass is committed (its events are in the outbox).
 * With it, the pass joins poller_passes (the overview's chart of the age of each resource's last
 * success), which keeps the passes of the hour before this one and the last one before that hour:
 * all the chart of the last hour needs, and a few rows per resource.
 */
export async function markSucceeded(
  db: Db,
  resource: Resource,
  pass: { fromDate: string; at: Date; stats: PassStats },
): Promise<void> {
  const data = {
    fromDate: pass.fromDate,
    lastSucceededAt: pass.at,
    lastError: null,
    lastStats: pass.stats as unknown as Prisma.InputJsonValue,
  };
  // Interactive, with the file's waits: a batch transaction waits 2 s for a connection, and when the
  // first passes of every resource start together that failed a pass that had done its work (CI).
  await db.$transaction(async (tx) => {
    await tx.pollerCursor.upsert({ where: { resource }, create: { resource, ...data }, update: data });
    await tx.$executeRaw`
      INSERT INTO poller_passes (resource, succeeded_at) VALUES (${resource}, ${pass.at})
      ON CONFLICT DO NOTHING`;
    await tx.$executeRaw`
      DELETE FROM poller_passes
       WHERE resource = ${resource}
         AND succeeded_at < (SELECT max(succeeded_at) FROM poller_passes
                              WHERE resource = ${resource} AND succeeded_at <= ${pass.at}::timestamptz - interval '1 hour')`;
  }, TX_OPTIONS);
}

/** Records the failure; the cursor (from_date) stays where it was, so the next pass re-reads. */
export async function markFailed(
  db: Db,
  resource: Resource,
  pass: { at: Date; error: string; stats: PassStats },
): Promise<void> {
  const data = {
    lastFailedAt: pass.at,
    lastError: pass.error.slice(0, 2000),
    lastStats: pass.stats as unknown as Prisma.InputJsonValue,
  };
  await db.pollerCursor.upsert({ where: { resource }, create: { resource, ...data }, update: data });
}

/**
 * Publishes the page's new versions in one transaction, through the dedupe the receiver shares
 * (batched: see batch-state-changes.ts). Answers how many changes were enqueued.
 */
export async function writePage(
  db: Db,
  resource: Resource,
  records: (Record<string, unknown> & { id: string; updated_at: string })[],
  source: string,
): Promise<number> {
  if (records.length === 0) return 0;
  const changes = await db.$transaction(
    (tx) => recordPolledChanges(tx, resource, records, source, activeTraceHeaders()),
    TX_OPTIONS,
  );
  if (changes > 0) await wakeRelay(db);
  return changes;
}

/**
 * After the commit, never inside the transaction (decision 001). A lost wake-up is not lost data:
 * the rows are committed and the relay finds them on its sweep, so a failed NOTIFY fails nothing.
 */
async function wakeRelay(db: Db): Promise<void> {
  await notifyRelay(db).catch(() => undefined);
}

/** Ids of the customers rentbridge knows and has not seen removed: whose issues are polled. */
export async function knownCustomerIds(db: Db): Promise<string[]> {
  const rows = await db.knownRecord.findMany({
    where: { resource: 'customers', removedAt: null },
    select: { recordId: true },
    orderBy: { recordId: 'asc' },
  });
  return rows.map((r) => r.recordId);
}

/**
 * After a complete full read: every record known, not removed, and absent from the read is
 * published as removed. Records first learned after the pass began (e.g. created by a webhook
 * while it paged) are left alone: a read that started earlier cannot have seen them.
 */
export async function writeRemovals(
  db: Db,
  resource: Resource,
  seenIds: ReadonlySet<string>,
  passStartedAt: Date,
  source: string,
): Promise<number> {
  const known = await db.knownRecord.findMany({
    where: { resource, removedAt: null, seenAt: { lt: passStartedAt } },
    select: { recordId: true, updatedAt: true, status: true },
  });
  const gone = known.filter((k) => !seenIds.has(k.recordId));
  const headers = activeTraceHeaders();
  let removed = 0;
  for (let i = 0; i < gone.length; i += 500) {
    const batch = gone.slice(i, i + 500);
    const published = await db.$transaction(async (tx) => {
      const recorded = await recordChanges(
        tx,
        batch.map((k) => {
          const record: Record<string, unknown> = { id: k.recordId, updated_at: k.updatedAt };
          if (k.status != null) record.status = k.status;
          return {
            resource,
            record,
            via: 'poll' as const,
            removed: true,
            source,
            ...(headers && { headers }),
          };
        }),
      );
      return recorded.filter((r) => r.published).length;
    }, TX_OPTIONS);
    if (published > 0) await wakeRelay(db);
    removed += published;
  }
  return removed;
}
