import type { Db } from '../db/prisma.js';
import type { OutboxMessageRow } from '../outbox/outbox-message.js';

/** The relay's reads and writes of the outbox table. */

export interface OutboxRow extends OutboxMessageRow {
  id: bigint;
  topic: string;
  attempts: number;
}

/** The oldest unpublished rows, in id (commit) order; parked rows are never fetched again. */
export async function fetchUnpublished(
  db: Db,
  limit: number,
  exceptTopics: string[] = [],
): Promise<OutboxRow[]> {
  const rows = await db.outboxMessage.findMany({
    where: {
      publishedAt: null,
      parkedAt: null,
      ...(exceptTopics.length > 0 ? { topic: { notIn: exceptTopics } } : {}),
    },
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

/**
 * The rows are on Kafka: published now, with where each landed when known (`positions`, by row id:
 * kept for the trace). One statement whatever the count.
 */
export async function markPublished(
  db: Db,
  ids: bigint[],
  positions: Map<bigint, { partition: number; offset: string }> = new Map(),
): Promise<void> {
  const partitions = ids.map((id) => positions.get(id)?.partition ?? null);
  const offsets = ids.map((id) => positions.get(id)?.offset ?? null);
  await db.$executeRaw`
    UPDATE outbox o SET published_at = now(), attempts = o.attempts + 1,
           kafka_partition = p.partition, kafka_offset = p.kafka_offset
      FROM unnest(${ids}::bigint[], ${partitions}::int[], ${offsets}::bigint[]) AS p(id, partition, kafka_offset)
     WHERE o.id = p.id`;
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
