import { z } from 'zod';
import { RESOURCES, SINGULAR, type Resource } from '../partner/resources.js';

/**
 * The Partner API's webhooks (an assumption, DESIGN.md "What the spec does not show"):
 * `{ "type": "<singular>.updated" | "<singular>.deleted", "data": <record> }`.
 */
export const partnerRecordSchema = z.looseObject({
  id: z.union([z.string().min(1), z.number()]),
  updated_at: z.string().min(1),
});

export const partnerWebhookSchema = z.looseObject({
  type: z.string().regex(/^[a-z_]+\.(updated|deleted)$/, '<singular>.updated or <singular>.deleted'),
  data: partnerRecordSchema,
});
export type PartnerWebhook = z.infer<typeof partnerWebhookSchema>;

const BY_SINGULAR = new Map<string, Resource>(RESOURCES.map((r) => [SINGULAR[r], r]));

/** The resource and kind a partner webhook type names, or null for a type rentbridge does not know. */
export function parsePartnerEventType(type: string): { resource: Resource; removed: boolean } | null {
  const match = /^([a-z_]+)\.(updated|deleted)$/.exec(type);
  const resource = match?.[1] ? BY_SINGULAR.get(match[1]) : undefined;
  if (!match || !resource) return null;
  return { resource, removed: match[2] === 'deleted' };
}
