import type { Message } from 'kafkajs';
import { z } from 'zod';
import { cloudEventHeaders, toCloudEvent } from '../events/cloudevent.js';
import type { RunRecord } from './reconcile-repository.js';
import { RECONCILE_VERDICTS, isDrift, type ReconcileItem } from './reconcile-types.js';

/**
 * The event of a finished run on `reconciliation.reports` (issue 45): a CloudEvent per run, keyed
 * by the run's id, carrying the run's counts and its drift items (confirmed ones are only counted,
 * so a month's run stays one message). docs/schemas/reconciliation-report.json is this schema;
 * docs/asyncapi.yaml lists the channel.
 */

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

export function reportOf(run: RunRecord, items: ReconcileItem[]): ReconciliationReport {
  const drift = items.filter((i) => isDrift(i.verdict));
  return {
    run_id: run.id,
    trigger: run.trigger,
    since: run.since.toISOString(),
    until: run.until.toISOString(),
    source: run.source,
    command_type: run.commandType,
    state: run.state,
    partner_requests: run.requests,
    counts: run.counts as ReconciliationReport['counts'],
    drift: drift.length > 0,
    items: drift.slice(0, MAX_REPORTED_ITEMS).map((i) => ({
      verdict: i.verdict,
      command_type: i.commandType,
      source: i.source,
      command_id: i.commandId,
      target_id: i.targetId,
      command_state: i.commandState,
      reason: i.reason,
    })),
    truncated: drift.length > MAX_REPORTED_ITEMS,
  };
}

/** The Kafka message of a run's report (structured-mode CloudEvent, the binding's headers). */
export function reportMessage(run: RunRecord, items: ReconcileItem[]): Message {
  const event = toCloudEvent({
    id: `reconciliation.run-${run.id}`,
    source: '/rentbridge/reconcile',
    type: RECONCILIATION_REPORT_TYPE,
    subject: String(run.id),
    data: reportOf(run, items),
  });
  return { key: String(run.id), value: JSON.stringify(event), headers: cloudEventHeaders(event) };
}
