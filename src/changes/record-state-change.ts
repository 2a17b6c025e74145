import type { Tx } from '../outbox/outbox-repository.js';
import { recordChanges, type RecordedChange, type StateChangeInput } from './record-changes.js';

export type { ChangeVia, RecordedChange, StateChangeInput } from './record-changes.js';

/**
 * One change through the one write path (`recordChanges`, src/changes/record-changes.ts), in the
 * caller's transaction. The caller wakes the relay after its commit when it was published.
 */
export async function recordStateChange(tx: Tx, change: StateChangeInput): Promise<RecordedChange> {
  const [recorded] = await recordChanges(tx, [change]);
  return recorded ?? { published: false };
}
