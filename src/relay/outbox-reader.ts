import type { Db } from '../db/prisma.js';
import type { OutboxMessageRow } from '../outbox/outbox-message.js';

/** The relay's reads and writes of the outbox table. */

export interface OutboxRow extends OutboxMessageRow {
  id: bigint;
  topic: string;
  attempts: number;
}

export async function markFailed(db: Db, ids: bigint[], error: string): Promise<void> {
  await db.outboxMessage.updateMany({
    where: { id: { in: ids } },
    data: { attempts: { increment: 1 }, lastError: error.slice(0, 2000) },
  });
}

/** Parks rows that can never be published: kept with their reason, no longer fetched. */
export async function markParked(db: Db, ids: bigint[], reason: string): Promise<void> {
  await db.outboxMessage.updateMany({
    where: { id: { in: ids } },
    data: { parkedAt: new Date(), attempts: { increment: 1 }, lastError: reason.slice(0, 2000) },
  });
}

/** Deletes published rows older than the retention, a chunk at a time; returns how many. */
export async function prunePublished(db: Db, retentionHours: number, chunk = 5000): Promise<number> {
  const before = new Date(Date.now() - retentionHours * 3_600_000);
  let total = 0;
  for (;;) {
    const n = await db.$executeRaw`
      DELETE FROM outbox WHERE id IN (
        SELECT id FROM outbox WHERE published_at IS NOT NULL AND published_at < ${before} LIMIT ${chunk})`;
    total += n;
    if (n < chunk) return total;
  }
}

/** Rows waiting to be published (parked rows apart) and the oldest one's time; parked rows. */
export async function backlog(db: Db): Promise<{ count: number; oldest: Date | null; parked: number }> {
  const [row] = await db.$queryRaw<{ count: bigint; oldest: Date | null; parked: bigint }[]>`
    SELECT count(*) FILTER (WHERE parked_at IS NULL) AS count,
           min(created_at) FILTER (WHERE parked_at IS NULL) AS oldest,
           count(*) FILTER (WHERE parked_at IS NOT NULL) AS parked
    FROM outbox WHERE published_at IS NULL`;
  return {
    count: Number(row?.count ?? 0),
    oldest: row?.oldest ?? null,
    parked: Number(row?.parked ?? 0),
  };
}

/** Creation time of the oldest row still to publish (parked rows apart), or null. */
export async function oldestUnpublished(db: Db): Promise<Date | null> {
  const [row] = await db.$queryRaw<{ oldest: Date | null }[]>`
    SELECT min(created_at) AS oldest FROM outbox WHERE published_at IS NULL AND parked_at IS NULL`;
  return row?.oldest ?? null;
}
