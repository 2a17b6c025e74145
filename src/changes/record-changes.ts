import { randomUUID } from 'node:crypto';
import type { Prisma } from '@prisma/client';
import { insertOutboxRows, type OutboxMessageInput, type Tx } from '../outbox/outbox-repository.js';
import { TOPICS } from '../kafka/topics.js';
import { TOMBSTONE_TYPE } from '../outbox/outbox-message.js';
import type { Resource } from '../partner/resources.js';
import { stateChangeType, type StateChange } from '../contracts/state-change.js';
import { withoutErased } from '../privacy/erased-records.js';

/**
 * The one write path of state changes: the receiver (webhooks) and the poller (list reads and
 * removals) record every change here, in batches, so a version seen by both is published once.
 *
 * In the caller's transaction, per batch: claim the versions in `published_versions` (the dedupe,
 * one statement), lock and read the records' previous status in `known_records` (one statement,
 * in key order so two writers of overlapping batches cannot deadlock), upsert `known_records`
 * (one statement) and write the outbox rows (one statement). It does NOT wake the relay: a NOTIFY
 * inside the transaction holds PostgreSQL's cluster-wide notify lock through the commit's WAL
 * flush and so serializes every notifying commit (decision 001). The caller wakes the relay after
 * its commit when `anyPublished(...)` says something was enqueued (src/outbox/relay-waker.ts).
 */

export type ChangeVia = 'webhook' | 'poll';

export interface StateChangeInput {
  resource: Resource;
  record: Record<string, unknown>;
  via: ChangeVia;
  /** A removal is its own version (`removed:<updated_at>`), published once. */
  removed?: boolean;
  /** CloudEvent source, e.g. `/webhooks/partner`, `/poller/leads`. */
  source: string;
  headers?: Record<string, string>;
}

export interface RecordedChange {
  /** False when this version was published before: nothing was enqueued. */
  published: boolean;
  eventId?: string;
}

interface Prepared {
  input: StateChangeInput;
  resource: Resource;
  id: string;
  updatedAt: string;
  /** The version claimed in published_versions (and written to known_records.updated_at). */
  version: string;
  status: string | null;
  removed: boolean;
}

const keyOf = (p: { resource: string; id: string }) => `${p.resource}\u0000${p.id}`;

/**
 * Records the changes in order, as if one after the other: a record that appears twice (two
 * versions, or the same one twice) is split over consecutive rounds, so the second sees the
 * first's status, or is a duplicate. Answers one result per input, in input order.
 */
export async function recordChanges(tx: Tx, inputs: StateChangeInput[]): Promise<RecordedChange[]> {
  const results: RecordedChange[] = inputs.map(() => ({ published: false }));
  // A record erased on request is left out (counted, not named) while the platform still holds it.
  const kept = await withoutErased(
    tx,
    inputs.map(prepare).map((p, index) => ({ ...p, index })),
    (p) => ({ resource: p.resource, id: p.id }),
    inputs[0]?.via === 'poll' ? 'poll' : 'webhook',
  );
  const prepared = kept;
  // Rounds: each (resource, id) at most once per round (an upsert may not touch a row twice).
  const rounds: number[][] = [];
  const seen = new Map<string, number>();
  prepared.forEach((p, index) => {
    const key = keyOf(p);
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (rounds[round] ??= []).push(index);
  });
  for (const round of rounds) {
    await recordRound(
      tx,
      round.map((i) => prepared[i]!),
    ).then((recorded) => round.forEach((i, n) => (results[prepared[i]!.index] = recorded[n]!)));
  }
  return results;
}

/** True when at least one change was enqueued: the caller wakes the relay after its commit. */
export function anyPublished(results: RecordedChange[]): boolean {
  return results.some((r) => r.published);
}

function prepare(input: StateChangeInput): Prepared {
  const id = String(input.record.id);
  const updatedAt = String(input.record.updated_at ?? '');
  const removed = input.removed ?? false;
  return {
    input,
    resource: input.resource,
    id,
    updatedAt,
    version: removed ? `removed:${updatedAt}` : updatedAt,
    status: typeof input.record.status === 'string' ? input.record.status : null,
    removed,
  };
}

async function recordRound(tx: Tx, batch: Prepared[]): Promise<RecordedChange[]> {
  if (batch.length === 0) return [];
  const claimed = await tx.$queryRaw<{ resource: string; record_id: string }[]>`
    INSERT INTO published_versions (resource, record_id, updated_at, via)
    SELECT v.resource, v.id, v.updated_at, v.via
    FROM unnest(${batch.map((p) => p.resource)}::text[], ${batch.map((p) => p.id)}::text[],
                ${batch.map((p) => p.version)}::text[], ${batch.map((p) => p.input.via)}::text[])
         AS v(resource, id, updated_at, via)
    ON CONFLICT DO NOTHING
    RETURNING resource, record_id`;
  if (claimed.length === 0) return batch.map(() => ({ published: false }));
  const claimedKeys = new Set(claimed.map((c) => keyOf({ resource: c.resource, id: c.record_id })));
  // In key order: the known_records upsert inserts new rows in the order the locks are taken.
  const fresh = batch
    .filter((p) => claimedKeys.has(keyOf(p)))
    .sort((a, b) => (a.resource === b.resource ? cmp(a.id, b.id) : cmp(a.resource, b.resource)));
  // Locked in key order, so two writers of overlapping batches cannot deadlock on each other.
  const previous = await tx.$queryRaw<{ resource: string; record_id: string; status: string | null }[]>`
    SELECT k.resource, k.record_id, k.status FROM known_records k
    JOIN unnest(${fresh.map((p) => p.resource)}::text[], ${fresh.map((p) => p.id)}::text[]) AS v(resource, id)
      ON k.resource = v.resource AND k.record_id = v.id
    ORDER BY k.resource, k.record_id
    FOR UPDATE OF k`;
  const previousStatus = new Map(
    previous.map((p) => [keyOf({ resource: p.resource, id: p.record_id }), p.status]),
  );
  const removedAt = new Date();
  await tx.$executeRaw`
    INSERT INTO known_records (resource, record_id, updated_at, status, removed_at, seen_at)
    SELECT v.resource, v.id, v.updated_at, v.status,
           CASE WHEN v.removed THEN ${removedAt}::timestamptz END, now()
    FROM unnest(${fresh.map((p) => p.resource)}::text[], ${fresh.map((p) => p.id)}::text[],
                ${fresh.map((p) => p.version)}::text[], ${fresh.map((p) => p.status)}::text[],
                ${fresh.map((p) => p.removed)}::boolean[])
         AS v(resource, id, updated_at, status, removed)
    ON CONFLICT (resource, record_id) DO UPDATE
      SET updated_at = EXCLUDED.updated_at, status = EXCLUDED.status,
          removed_at = EXCLUDED.removed_at, seen_at = now()`;
  const eventIds = new Map<string, string>();
  // Outbox rows in the callers' order, not the lock order.
  const messages: OutboxMessageInput[] = batch
    .filter((p) => claimedKeys.has(keyOf(p)))
    .flatMap((p) => {
      const eventId = randomUUID();
      eventIds.set(keyOf(p), eventId);
      const data: StateChange = {
        resource: p.resource,
        id: p.id,
        updated_at: p.updatedAt,
        // One type for record.id on the topic, whoever saw the version first (the poller's are strings).
        record: { ...p.input.record, id: p.id },
        previous_status: previousStatus.get(keyOf(p)) ?? null,
        via: p.input.via,
        removed: p.removed,
      };
      const change: OutboxMessageInput = {
        topic: TOPICS.partner(p.resource),
        key: p.id,
        type: stateChangeType(p.resource, p.removed),
        source: p.input.source,
        subject: p.id,
        // Records are JSON as the API sent them.
        data: data as unknown as Prisma.InputJsonValue,
        headers: p.input.headers,
        eventId,
      };
      // A removal is followed by a tombstone (same key, null value), so compaction of the
      // changelog drops the record; the relay publishes both in row order, on one partition.
      return p.removed ? [change, tombstone(change)] : [change];
    });
  await insertOutboxRows(tx, messages);
  return batch.map((p) => {
    const eventId = eventIds.get(keyOf(p));
    return eventId ? { published: true, eventId } : { published: false };
  });
}

/** The tombstone row that follows a removal: same topic and key; its `data` is never sent. */
export function tombstone(removal: OutboxMessageInput): OutboxMessageInput {
  return {
    topic: removal.topic,
    key: removal.key,
    type: TOMBSTONE_TYPE,
    source: removal.source,
    subject: removal.key,
    data: {},
    headers: removal.headers,
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
