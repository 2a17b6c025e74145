import { z } from 'zod';
import { WEBHOOK_EVENT_ACTIONS } from '../partner/assumptions.js';
import { RESOURCES, SINGULAR, type Resource } from '../partner/resources.js';
import { idString } from './ids.js';

/**
 * A record as a webhook brings it: checked at the edge, so that an id or a time no index can
 * hold is the sender's 422, not our 503. The id follows src/contracts/ids.ts; `updated_at` is a
 * date-time of at most 64 characters.
 */
export const partnerWebhookRecordSchema = z.looseObject({
  // Kept as sent (a number stays a number in the published record).
  id: z.union([idString, z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)]),
  updated_at: z
    .string()
    .min(1)
    .max(64)
    .refine((v) => !Number.isNaN(Date.parse(v)), 'must be an ISO 8601 date-time'),
});

/** `<singular>.<action>` for each action of src/partner/assumptions.ts (`updated`, `deleted`). */
const ACTIONS = WEBHOOK_EVENT_ACTIONS.join('|');
const EVENT_TYPE = new RegExp(`^[a-z_]+\\.(${ACTIONS})$`);
const EVENT_TYPE_PARTS = new RegExp(`^([a-z_]+)\\.(${ACTIONS})$`);

/**
 * The Partner API's webhooks (an assumption, DESIGN.md "What the spec does not show", kept in
 * src/partner/assumptions.ts): `{ "type": "<singular>.updated" | "<singular>.deleted", "data": <record> }`.
 */
export const partnerWebhookSchema = z.looseObject({
  type: z.string().regex(EVENT_TYPE, WEBHOOK_EVENT_ACTIONS.map((a) => `<singular>.${a}`).join(' or ')),
  data: partnerWebhookRecordSchema,
});
export type PartnerWebhook = z.infer<typeof partnerWebhookSchema>;

const BY_SINGULAR = new Map<string, Resource>(RESOURCES.map((r) => [SINGULAR[r], r]));

/** The resource and kind a partner webhook type names, or null for a type rentbridge does not know. */
export function parsePartnerEventType(type: string): { resource: Resource; removed: boolean } | null {
  const match = EVENT_TYPE_PARTS.exec(type);
  const resource = match?.[1] ? BY_SINGULAR.get(match[1]) : undefined;
  if (!match || !resource) return null;
  return { resource, removed: match[2] === 'deleted' };
}
