import { z } from 'zod';
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
  /** Who saw it: a webhook, the poller, or `rentbridge resync` (the current state again, not a change). */
  via: z.enum(['webhook', 'poll', 'resync']),
  /** True when the record disappeared (a delete webhook, or gone from a full read). */
  removed: z.boolean(),
});
export type StateChange = z.infer<typeof stateChangeSchema>;

export function stateChangeType(resource: Resource, removed: boolean): string {
  return `partner.${SINGULAR[resource]}.${removed ? 'removed' : 'updated'}`;
}
