import { Counter, Gauge } from 'prom-client';
import { registry, startAtZero } from '../metrics.js';
import { RECONCILED_TYPES } from './reconcile-repository.js';
import { RECONCILE_VERDICTS, type ReconcileItem } from './reconcile-types.js';

/**
 * Reconciliation's metrics, on /metrics of the process that runs passes (the poller role's
 * schedule, or `start`). An alert fires on any `missing` or `unexpected`
 * (monitoring/prometheus/alerts.yml: RentbridgeReconciliationDrift).
 */
export const reconcileMetrics = {
  items: new Counter({
    name: 'rentbridge_reconciliation_items_total',
    help: 'Reconciliation items, by command type and verdict (confirmed, missing, unexpected, ambiguous, settled_applied, settled_absent, unknown)',
    labelNames: ['command_type', 'verdict'] as const,
    registers: [],
  }),
  lastRun: new Gauge({
    name: 'rentbridge_reconciliation_last_run_timestamp_seconds',
    help: 'When the last reconciliation run finished (Unix seconds)',
    registers: [],
  }),
  drift: new Gauge({
    name: 'rentbridge_reconciliation_last_run_drift',
    help: 'Items of the last reconciliation run, by verdict (0 for each verdict it did not find)',
    labelNames: ['verdict'] as const,
    registers: [],
  }),
};

/** Puts the metrics on this process's /metrics, every series at 0 (idempotent). */
export function exposeReconcileMetrics(): void {
  for (const metric of Object.values(reconcileMetrics)) {
    if (!registry.getSingleMetric((metric as unknown as { name: string }).name))
      registry.registerMetric(metric);
  }
  startAtZero(reconcileMetrics.items, {
    command_type: RECONCILED_TYPES,
    verdict: RECONCILE_VERDICTS,
  });
}

export function recordRunMetrics(items: ReconcileItem[]): void {
  const last = Object.fromEntries(RECONCILE_VERDICTS.map((v) => [v, 0]));
  for (const item of items) {
    reconcileMetrics.items.inc({ command_type: item.commandType, verdict: item.verdict });
    last[item.verdict]!++;
  }
  for (const [verdict, n] of Object.entries(last)) reconcileMetrics.drift.set({ verdict }, n);
  reconcileMetrics.lastRun.set(Date.now() / 1000);
}
