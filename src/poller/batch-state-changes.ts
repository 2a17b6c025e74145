import type { Prisma } from '@prisma/client';
import type { StateChange } from '../events/state-change.js';
import { stateChangeType } from '../events/state-change.js';
import { TOPICS } from '../kafka/topics.js';
import { enqueue, type Tx } from '../outbox/outbox-repository.js';
import type { Resource } from '../partner/resources.js';

/**
 * `recordStateChange` (src/changes/record-state-change.ts) for a whole page of polled records at once:
 * the same claim in `published_versions`, the same previous status from `known_records`, the same
 * event on `partner.<resource>`, but in four statements per page instead of five per record. A
 * first pass over 100,000 records spends its time here (see bench/sync.ts), so the poller batches;
 * the receiver, which sees one record at a time, keeps the single-record path. Both write the same
 * rows, so a version claimed by either is published once.
 */
export async function recordPolledChanges(
  tx: Tx,
  resource: Resource,
  records: (Record<string, unknown> & { id: string; updated_at: string })[],
  source: string,
): Promise<number> {
  // One row per id: an upsert may not touch a row twice in one statement.
  const byId = new Map(records.map((r) => [r.id, r]));
  if (byId.size === 0) return 0;
  const ids = [...byId.keys()];
  const versions = ids.map((id) => byId.get(id)?.updated_at ?? '');
  const claimed = await tx.$queryRaw<{ record_id: string }[]>`
    INSERT INTO published_versions (resource, record_id, updated_at, via)
    SELECT ${resource}, v.id, v.updated_at, 'poll'
    FROM unnest(${ids}::text[], ${versions}::text[]) AS v(id, updated_at)
    ON CONFLICT DO NOTHING
    RETURNING record_id`;
  if (claimed.length === 0) return 0;
  const newIds = claimed.map((c) => c.record_id).sort();
  // Locked in id order, so two writers of overlapping pages cannot deadlock on each other.
  const previous = await tx.$queryRaw<{ record_id: string; status: string | null }[]>`
    SELECT record_id, status FROM known_records
    WHERE resource = ${resource} AND record_id = ANY(${newIds}::text[])
    ORDER BY record_id
    FOR UPDATE`;
  const previousStatus = new Map(previous.map((p) => [p.record_id, p.status]));
  const fresh = newIds.map((id) => byId.get(id)).filter((r) => r !== undefined);
  const statusOf = (r: Record<string, unknown>) => (typeof r.status === 'string' ? r.status : null);
  await tx.$executeRaw`
    INSERT INTO known_records (resource, record_id, updated_at, status, removed_at, seen_at)
    SELECT ${resource}, v.id, v.updated_at, v.status, NULL, now()
    FROM unnest(${fresh.map((r) => r.id)}::text[], ${fresh.map((r) => r.updated_at)}::text[],
                ${fresh.map(statusOf)}::text[]) AS v(id, updated_at, status)
    ON CONFLICT (resource, record_id) DO UPDATE
      SET updated_at = EXCLUDED.updated_at, status = EXCLUDED.status, removed_at = NULL, seen_at = now()`;
  await enqueue(
    tx,
    fresh.map((record) => {
      const data: StateChange = {
        resource,
        id: record.id,
        updated_at: record.updated_at,
        record,
        previous_status: previousStatus.get(record.id) ?? null,
        via: 'poll',
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
    }),
  );
  return fresh.length;
}
