import { recordChanges } from '../changes/record-changes.js';
import type { Tx } from '../outbox/outbox-repository.js';
import type { Resource } from '../partner/resources.js';

/**
 * A page of polled records through the one write path (`recordChanges`,
 * src/changes/record-changes.ts): one version per id per page (the last one wins), in id order.
 * Answers how many changes were enqueued; the caller wakes the relay after its commit.
 */
export async function recordPolledChanges(
  tx: Tx,
  resource: Resource,
  records: (Record<string, unknown> & { id: string; updated_at: string })[],
  source: string,
  /** Trace context of the pass (`traceparent`), carried by every change's outbox row. */
  headers?: Record<string, string>,
): Promise<number> {
  const byId = new Map(records.map((r) => [r.id, r]));
  if (byId.size === 0) return 0;
  const page = [...byId.keys()].sort().map((id) => byId.get(id)!);
  const recorded = await recordChanges(
    tx,
    page.map((record) => ({ resource, record, via: 'poll' as const, source, ...(headers && { headers }) })),
  );
  return recorded.filter((r) => r.published).length;
}
