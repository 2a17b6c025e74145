import { z } from 'zod';

/**
 * What property-management systems send to `POST /webhooks/pms/:source`: an envelope
 * `{ type, data }` whose `data` is already the command rentbridge will carry to the Partner API.
 * Which command each type carries is said by the list of command types
 * (src/contracts/command-contracts.ts, `pmsEventSchemaOf`).
 */
export { PMS_EVENT_TYPES } from './command-contracts.js';

/** Any webhook body: a type and its data. Unknown types pass this and go to inbound.unrouted. */
export const webhookEnvelopeSchema = z.looseObject({
  type: z.string().min(1).max(200),
  data: z.unknown(),
});
