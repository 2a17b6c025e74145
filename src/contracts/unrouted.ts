import { z } from 'zod';

/**
 * A validly signed webhook of a type rentbridge does not route, published on inbound.unrouted
 * (keyed by its webhook-id) so that nothing a sender signed is lost.
 */
export const UNROUTED_TYPE = 'rentbridge.inbound.unrouted';

export const unroutedEventSchema = z.object({
  /** `partner` or `pms:<source>`. */
  source: z.string(),
  webhook_id: z.string(),
  /** The `type` the sender gave. */
  received_type: z.string(),
  /** The body as received, parsed. */
  payload: z.unknown(),
});
export type UnroutedEvent = z.infer<typeof unroutedEventSchema>;
