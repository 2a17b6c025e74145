import type { Prisma } from '@prisma/client';
import { claimVersion, type ChangeVia } from './published-versions.js';
import { enqueue, type Tx } from '../outbox/outbox-repository.js';
import { TOPICS } from '../kafka/topics.js';
import type { Resource } from '../partner/resources.js';
import { stateChangeType, type StateChange } from '../events/state-change.js';

/**
 * The one place a state change is recorded: the receiver (a webhook) and the poller (a list
 * read) both record changes here, so a version seen by both is published once.
 */

export interface RecordedChange {
  /** False when this version was published before: nothing was enqueued. */
  published: boolean;
  eventId?: string;
}

/**
 * Claims the record's version and, when it is new, enqueues its state change, in the caller's
 * transaction. A removal is its own version (`removed:<updated_at>`), published once.
 */
export async function recordStateChange(
  tx: Tx,
  change: {
    resource: Resource;
    record: Record<string, unknown>;
    via: ChangeVia;
    removed?: boolean;
    source: string;
    headers?: Record<string, string>;
  },
): Promise<RecordedChange> {
  const id = String(change.record.id);
  const updatedAt = String(change.record.updated_at ?? '');
  const removed = change.removed ?? false;
  const status = typeof change.record.status === 'string' ? change.record.status : null;
  const claim = await claimVersion(tx, {
    resource: change.resource,
    recordId: id,
    updatedAt: removed ? `removed:${updatedAt}` : updatedAt,
    status,
    via: change.via,
  });
  if (!claim.isNew) return { published: false };
  if (removed) {
    await tx.knownRecord.update({
      where: { resource_recordId: { resource: change.resource, recordId: id } },
      data: { removedAt: new Date() },
    });
  }
  const data: StateChange = {
    resource: change.resource,
    id,
    updated_at: updatedAt,
    // One type for record.id on the topic, whoever saw the version first (the poller's are strings).
    record: { ...change.record, id },
    previous_status: claim.previousStatus,
    via: change.via,
    removed,
  };
  const [row] = await enqueue(tx, [
    {
      topic: TOPICS.partner(change.resource),
      key: id,
      type: stateChangeType(change.resource, removed),
      source: change.source,
      subject: id,
      // Records are JSON as the API sent them.
      data: data as unknown as Prisma.InputJsonValue,
      headers: change.headers,
    },
  ]);
  return { published: true, eventId: row?.eventId };
}
