import type { Prisma } from '@prisma/client';
import { z } from 'zod';
import { claimVersion, type ChangeVia } from '../changes/published-versions.js';
import { enqueue, type Tx } from '../outbox/outbox-repository.js';
import { TOPICS } from '../kafka/topics.js';
import { SINGULAR, type Resource } from '../partner/resources.js';

/**
 * A state change of a Partner API record, published on partner.<resource>. The receiver (a
 * webhook) and the poller (a list read) both record changes here, so a version seen by both is
 * published once.
 */
export const stateChangeSchema = z.object({
  resource: z.string(),
  id: z.string(),
  updated_at: z.string(),
  /**
   * The record as the Partner API showed it (unknown fields kept), except `record.id`: always a
   * string, equal to `id` and the Kafka key, whether a webhook (numbers) or the poller saw it first.
   */
  record: z.looseObject({
    id: z.string().describe('the record id, always a string (the Partner API sends numbers)'),
  }),
  /** Its status in the previous version rentbridge saw, when there was one. */
  previous_status: z.string().nullable(),
  via: z.enum(['webhook', 'poll']),
  /** True when the record disappeared (a delete webhook, or gone from a full read). */
  removed: z.boolean(),
});
export type StateChange = z.infer<typeof stateChangeSchema>;

export function stateChangeType(resource: Resource, removed: boolean): string {
  return `partner.${SINGULAR[resource]}.${removed ? 'removed' : 'updated'}`;
}

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
