import { Counter, Gauge } from 'prom-client';
import { registry, startAtZero } from '../metrics.js';
import { RETAINED_TABLES } from './retention-rules.js';

/**
 * The retention pruner's metrics (docs/runbook.md, monitoring/prometheus/alerts.yml), on /metrics
 * of the process that prunes (the relay's: `relay`, `start`) only, as every metric group (src/metrics.ts).
 */
export const retentionMetrics = {
  pruned: new Counter({
    name: 'rentbridge_retention_pruned_rows_total',
    help: 'Rows deleted by the retention pruner, by table',
    labelNames: ['table'] as const,
    registers: [],
  }),
  behind: new Gauge({
    name: 'rentbridge_retention_behind',
    help: "1 when the table's last pass ended with rows past its retention still there (a backlog larger than a pass), else 0",
    labelNames: ['table'] as const,
    registers: [],
  }),
  lastPass: new Gauge({
    name: 'rentbridge_retention_last_pass_timestamp_seconds',
    help: 'When the retention pruner last finished a pass over every table (Unix time)',
    registers: [],
  }),
};

/** Registers the metrics on this process's /metrics, each table's counter at 0. */
export function exposeRetentionMetrics(): void {
  for (const metric of Object.values(retentionMetrics)) {
    if (!registry.getSingleMetric((metric as unknown as { name: string }).name))
      registry.registerMetric(metric);
  }
  startAtZero(retentionMetrics.pruned, { table: RETAINED_TABLES });
}
