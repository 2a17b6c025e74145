import { z } from 'zod';
import { AppError } from '../errors.js';
import { COMMAND_KINDS } from '../contracts/outcomes.js';
import { DEAD_LETTER_REASONS } from './dead-letter-headers.js';

/** States of a dead letter: only an `open` one can be redriven or discarded. */
export const DEAD_LETTER_STATES = ['open', 'redriven', 'discarded', 'closed_applied'] as const;
export type DeadLetterState = (typeof DEAD_LETTER_STATES)[number];

/** Years 1 to 9999: what ISO 8601 holds without an extension and PostgreSQL reads (it has no year 0). */
function inYearRange(v: string): boolean {
  const t = Date.parse(v);
  if (Number.isNaN(t)) return false;
  const year = new Date(t).getUTCFullYear();
  return year >= 1 && year <= 9999;
}

/** A date filter: ISO 8601, years 1 to 9999 (every list's `since`/`until`). */
export const filterDate = z
  .string()
  .refine((v) => !Number.isNaN(Date.parse(v)), 'must be an ISO 8601 date or date-time')
  .refine(inYearRange, 'must be a date in the years 1 to 9999')
  .transform((v) => new Date(v));

/**
 * A text filter of any list (dead letters, audit, trace ids): PostgreSQL text cannot hold NUL,
 * so a filter with one is the caller's 400, not our 500.
 */
export const filterText = z
  .string()
  .min(1)
  .max(2000)
  // eslint-disable-next-line no-control-regex -- NUL is exactly what must be refused
  .refine((v) => !/\u0000/.test(v), 'must not contain a NUL character');

/**
 * The search filters shared by `rentbridge dlq list`, `dlq redrive --where` and
 * `GET /ops/api/dead-letters`. Every filter is optional; they combine with AND.
 */
export const deadLetterFiltersSchema = z.object({
  /** A DLQ topic or an original topic, with or without KAFKA_TOPIC_PREFIX. */
  topic: filterText.optional(),
  reason: z.enum(DEAD_LETTER_REASONS).optional(),
  code: filterText.optional(),
  key: filterText.optional(),
  commandId: filterText.optional(),
  /** The command's source (a PMS source such as `acme`, or a producer's CloudEvent source). */
  source: filterText.optional(),
  /** The command's type: application_decision, rental_payment, customer_registration, enrollment. */
  commandType: z.enum(COMMAND_KINDS).optional(),
  requestId: filterText.optional(),
  /** Default `open`; `all` for every state. */
  state: z.enum([...DEAD_LETTER_STATES, 'all']).default('open'),
  since: filterDate.optional(),
  until: filterDate.optional(),
  /** Which time `since`/`until` apply to (default `indexed`). */
  timeField: z.enum(['indexed', 'last_failure']).default('indexed'),
  /** Case-insensitive substring of the value, the error message or the key. */
  search: filterText.optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(100),
});
/** `GET /ops/api/audit`: who did what to which target, newest first. */
export const auditFiltersSchema = z.object({
  target: filterText.optional(),
  actor: filterText.optional(),
  action: filterText.optional(),
  since: filterDate.optional(),
  until: filterDate.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export type AuditFilters = z.infer<typeof auditFiltersSchema>;

export type DeadLetterFilters = z.infer<typeof deadLetterFiltersSchema>;
export type DeadLetterFiltersInput = z.input<typeof deadLetterFiltersSchema>;

/** zod issues as one line, for CLI errors and API envelopes. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; ');
}

/**
 * The one parser of every list's filters (dead letters, audit): the schema's rules (NUL refused,
 * dates in years 1 to 9999, known enums) or a 400 `validation_error` naming each field. The CLI
 * passes its options as they are (commander names them as the schema does) and turns the 400
 * into a usage error; the ops API passes its query string through `filtersFromQuery`.
 */
export function parseFilters<T>(schema: z.ZodType<T>, input: Record<string, unknown>): T {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new AppError(400, 'validation_error', describeIssues(parsed.error));
  return parsed.data;
}

/** A query string's filters: `snake_case` names to the schema's `camelCase`, empty values dropped. */
export function filtersFromQuery<T>(schema: z.ZodType<T>, query: Record<string, unknown>): T {
  const input: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(query)) {
    if (value === '' || value === undefined) continue;
    input[name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())] = value;
  }
  return parseFilters(schema, input);
}
