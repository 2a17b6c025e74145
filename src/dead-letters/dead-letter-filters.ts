import { z } from 'zod';
import { DEAD_LETTER_REASONS } from './dead-letter-headers.js';

/** States of a dead letter: only an `open` one can be redriven or discarded. */
export const DEAD_LETTER_STATES = ['open', 'redriven', 'discarded', 'closed_applied'] as const;
export type DeadLetterState = (typeof DEAD_LETTER_STATES)[number];

const isoDate = z
  .string()
  .refine((v) => !Number.isNaN(Date.parse(v)), 'must be an ISO 8601 date or date-time')
  .transform((v) => new Date(v));

/**
 * The search filters shared by `rentbridge dlq list`, `dlq redrive --where` and
 * `GET /ops/api/dead-letters`. Every filter is optional; they combine with AND.
 */
export const deadLetterFiltersSchema = z.object({
  /** A DLQ topic or an original topic, with or without KAFKA_TOPIC_PREFIX. */
  topic: z.string().min(1).optional(),
  reason: z.enum(DEAD_LETTER_REASONS).optional(),
  code: z.string().min(1).optional(),
  key: z.string().min(1).optional(),
  commandId: z.string().min(1).optional(),
  requestId: z.string().min(1).optional(),
  /** Default `open`; `all` for every state. */
  state: z.enum([...DEAD_LETTER_STATES, 'all']).default('open'),
  since: isoDate.optional(),
  until: isoDate.optional(),
  /** Which time `since`/`until` apply to (default `indexed`). */
  timeField: z.enum(['indexed', 'last_failure']).default('indexed'),
  /** Case-insensitive substring of the value, the error message or the key. */
  search: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(100),
});
export type DeadLetterFilters = z.infer<typeof deadLetterFiltersSchema>;
export type DeadLetterFiltersInput = z.input<typeof deadLetterFiltersSchema>;

/** zod issues as one line, for CLI errors and API envelopes. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; ');
}
