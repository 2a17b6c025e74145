import type { Db } from '../db/prisma.js';
import type { OutboxMessageRow } from './outbox-message.js';

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

/**
 * The topics with waiting rows, found through the partial index of unpublished rows (a loose index
 * scan: one probe per topic), never a scan of the whole backlog. Read by the relay's stream reader
 * (which topics to drain) and below (the oldest waiting row).
 */
export const WAITING_TOPICS_CTE = `
  WITH RECURSIVE t(topic) AS (
    (SELECT topic FROM outbox WHERE published_at IS NULL AND parked_at IS NULL ORDER BY topic LIMIT 1)
    UNION ALL
    SELECT (SELECT o.topic FROM outbox o
             WHERE o.published_at IS NULL AND o.parked_at IS NULL AND o.topic > t.topic
             ORDER BY o.topic LIMIT 1)
      FROM t WHERE t.topic IS NOT NULL)`;

/** The oldest waiting row of each topic: the first row by id of each topic stands for its oldest. */
const OLDEST_SQL = `${WAITING_TOPICS_CTE}
  SELECT min(f.created_at) AS oldest
    FROM t CROSS JOIN LATERAL (
      SELECT created_at FROM outbox o
       WHERE o.topic = t.topic AND o.published_at IS NULL AND o.parked_at IS NULL
       ORDER BY o.id LIMIT 1) f
   WHERE t.topic IS NOT NULL`;

/**
 * Rows waiting to be published (parked rows apart), the oldest one's time, and parked rows. The
 * count is an index-only scan of the whole backlog (tens of ms at 100,000 rows): with
 * `count: false` it is left out (null) and only the cheap figures are read.
 */
export async function backlog(
  db: Db,
  options: { count?: boolean } = {},
): Promise<{ count: number | null; oldest: Date | null; parked: number }> {
  const [oldest, parked, count] = await Promise.all([
    oldestUnpublished(db),
    db.$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND parked_at IS NOT NULL`,
    options.count === false
      ? null
      : db.$queryRaw<{ n: bigint }[]>`
          SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND parked_at IS NULL`,
  ]);
  return {
    count: count === null ? null : Number(count[0]?.n ?? 0),
    oldest,
    parked: Number(parked[0]?.n ?? 0),
  };
}

/** Creation time of the oldest row still to publish (parked rows apart), or null: see OLDEST_SQL. */
export async function oldestUnpublished(db: Db): Promise<Date | null> {
  const [row] = await db.$queryRawUnsafe<{ oldest: Date | null }[]>(OLDEST_SQL);
  return row?.oldest ?? null;
}
