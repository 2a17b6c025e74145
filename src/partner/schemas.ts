import { z } from 'zod';

/**
 * zod shapes of the Partner API's answers. Records are loose objects: the spec shows few fields
 * (2.2), so every unknown field is kept as the API sent it.
 */

export const partnerRecordSchema = z.looseObject({
  id: z.union([z.string(), z.number()]),
  updated_at: z.string().optional(),
  status: z.string().optional(),
});
export type PartnerRecord = z.infer<typeof partnerRecordSchema>;

/** The list envelope (spec 2.3); `last_page` only on applications, deprecated. */
export const listPageSchema = z.looseObject({
  object: z.literal('list').optional(),
  items: z.array(partnerRecordSchema),
  current_page: z.number().int(),
  page_count: z.number().int(),
  total_count: z.number().int(),
  has_more: z.boolean(),
  last_page: z.boolean().optional(),
});

export interface ListPage<T = PartnerRecord> {
  items: T[];
  current_page: number;
  page_count: number;
  total_count: number;
  has_more: boolean;
  last_page?: boolean;
}

export const bankAccountsSchema = z.array(partnerRecordSchema);
export const customerIssuesSchema = z.looseObject({ issues: z.array(partnerRecordSchema) });

/** ASSUMPTION (assumptions.ts): `{ token, expires_in }`. */
export const tokenResponseSchema = z.looseObject({
  token: z.string().min(1),
  expires_in: z.number().positive().optional(),
});

/** The error envelope (spec 7.1). Every field optional: a broken answer still becomes an error. */
export const errorEnvelopeSchema = z.object({
  error: z.looseObject({
    message: z.string().optional(),
    status: z.number().optional(),
    code: z.string().optional(),
    request_id: z.string().optional(),
    errors: z.array(z.string()).optional(),
    details: z.record(z.string(), z.unknown()).optional(),
    error_id: z.string().optional(),
    error_signature: z.string().optional(),
    processor_code: z.string().optional(),
    processor_decline_code: z.string().optional(),
  }),
});

export const unknownJson = z.unknown();
