import type { Message } from 'kafkajs';
import { cloudEventHeaders, toCloudEvent } from '../contracts/cloudevent.js';
import type { RunRecord } from './reconcile-repository.js';
import {
  MAX_REPORTED_ITEMS,
  RECONCILIATION_REPORT_TYPE,
  type ReconciliationReport,
} from '../contracts/reconciliation-report.js';
import { isDrift, type ReconcileItem } from './reconcile-types.js';

/**
 * The event of a finished run on `reconciliation.reports` (issue 45): a CloudEvent per run, keyed
 * by the run's id, carrying the run's counts and its drift items (confirmed ones are only counted,
 * so a month's run stays one message). docs/schemas/reconciliation-report.json is this schema;
 * docs/asyncapi.yaml lists the channel.
 */

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
