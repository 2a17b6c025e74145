import { z } from 'zod';

/**
 * The report of a reconciliation run on `reconciliation.reports` (issue 45, docs/reconciliation.md)
 * and the verdicts it speaks of. Here, beside the other event schemas, so docs/schemas is exported
 * from src/contracts alone; src/reconcile builds the report (reconcile-event.ts).
 */

/** Every verdict of a reconciliation item (src/reconcile/reconcile-types.ts says what each means). */
export const RECONCILE_VERDICTS = [
  'confirmed',
  'missing',
  'unexpected',
  'ambiguous',
  'settled_applied',
  'settled_absent',
  'unknown',
] as const;

export const RECONCILIATION_REPORT_TYPE = 'rentbridge.reconciliation.report';

const countsSchema = z.object(
  Object.fromEntries(RECONCILE_VERDICTS.map((v) => [v, z.number().int().nonnegative()])) as Record<
    (typeof RECONCILE_VERDICTS)[number],
    z.ZodNumber
  >,
);

/** The most drift items one event carries; the rest are in PostgreSQL (`truncated` says so). */
export const MAX_REPORTED_ITEMS = 500;

export const reconciliationReportSchema = z.object({
  run_id: z.number().int().describe('the run, as `rentbridge reconcile` and the console show it'),
  trigger: z.enum(['cli', 'schedule', 'ops']).or(z.string()),
  since: z.string().describe('start of the window (ISO 8601, inclusive)'),
  until: z.string().describe('end of the window (ISO 8601, exclusive)'),
  source: z.string().nullable(),
  command_type: z.string().nullable(),
  state: z.enum(['finished', 'failed']).or(z.string()),
  partner_requests: z.number().int().nonnegative(),
  counts: countsSchema,
  drift: z.boolean().describe('true when any item is neither confirmed nor settled_applied'),
  items: z.array(
    z.object({
      verdict: z.enum(RECONCILE_VERDICTS),
      command_type: z.string(),
      source: z.string().nullable(),
      command_id: z.string().nullable(),
      target_id: z.string(),
      command_state: z.string().nullable(),
      reason: z.string(),
    }),
  ),
  truncated: z.boolean(),
});
export type ReconciliationReport = z.infer<typeof reconciliationReportSchema>;
