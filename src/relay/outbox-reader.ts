import type { Db } from '../db/prisma.js';

/** The relay's reads and writes of the outbox table. */

export interface OutboxRow {
  id: bigint;
  eventId: string;
  topic: string;
  key: string;
  type: string;
  source: string;
  subject: string | null;
  data: unknown;
  headers: Record<string, string>;
  createdAt: Date;
  attempts: number;
}

/** The oldest unpublished rows, in id (commit) order. */
export async function fetchUnpublished(db: Db, limit: number): Promise<OutboxRow[]> {
  const rows = await db.outboxMessage.findMany({
    where: { publishedAt: null },
    orderBy: { id: 'asc' },
    take: limit,
  });
  return rows.map((r) => ({
    id: r.id,
    eventId: r.eventId,
    topic: r.topic,
    key: r.key,
    type: r.type,
    source: r.source,
    subject: r.subject,
    data: r.data,
    headers: (r.headers ?? {}) as Record<string, string>,
    createdAt: r.createdAt,
    attempts: r.attempts,
  }));
}

export async function markPublished(db: Db, ids: bigint[]): Promise<void> {
  await db.outboxMessage.updateMany({
    where: { id: { in: ids } },
    data: { publishedAt: new Date(), attempts: { increment: 1 } },
  });
}

export async function markFailed(db: Db, ids: bigint[], error: string): Promise<void> {
  await db.outboxMessage.updateMany({
    where: { id: { in: ids } },
    data: { attempts: { increment: 1 }, lastError: error.slice(0, 2000) },
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

export async function backlog(db: Db): Promise<{ count: number; oldest: Date | null }> {
  const [row] = await db.$queryRaw<{ count: bigint; oldest: Date | null }[]>`
    SELECT count(*) AS count, min(created_at) AS oldest FROM outbox WHERE published_at IS NULL`;
  return { count: Number(row?.count ?? 0), oldest: row?.oldest ?? null };
}
