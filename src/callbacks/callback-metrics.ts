import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../metrics.js';

/**
 * The metrics of outcome callbacks (docs/runbook.md), on /metrics of the process that delivers
 * them (`start`, `rentbridge callbacks`) only, as every metric group (src/metrics.ts).
 */
export const callbackMetrics = {
  deliveries: new Counter({
    name: 'rentbridge_callback_attempts_total',
    help: 'Callback POSTs to PMS sources, by source and result (delivered, failed, timeout, network_error, gone)',
    labelNames: ['source', 'result'] as const,
    registers: [],
  }),
  deadLettered: new Counter({
    name: 'rentbridge_callback_dead_letters_total',
    help: 'Callback deliveries that ran out of retries (dead letters), by source',
    labelNames: ['source'] as const,
    registers: [],
  }),
  latency: new Histogram({
    name: 'rentbridge_callback_delivery_seconds',
    help: "From the outcome's arrival to its callback's 2xx, by source",
    labelNames: ['source'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600, 86400],
    registers: [],
  }),
  queueAge: new Gauge({
    name: 'rentbridge_callback_queue_age_seconds',
    help: 'Age of the oldest callback delivery still pending, by source (0 when none waits)',
    labelNames: ['source'] as const,
    registers: [],
  }),
  pending: new Gauge({
    name: 'rentbridge_callback_pending',
    help: 'Callback deliveries pending (not yet delivered, not dead), by source',
    labelNames: ['source'] as const,
    registers: [],
  }),
  limit: new Gauge({
    name: 'rentbridge_callback_concurrency_limit',
    help: "Callbacks a source may have in flight at once, adapted to its endpoint's answers (CALLBACK_CONCURRENCY up to CALLBACK_MAX_CONCURRENCY)",
    labelNames: ['source'] as const,
    registers: [],
  }),
  breaker: new Gauge({
    name: 'rentbridge_callback_breaker_state',
    help: "State of a source's callback circuit breaker: 0 closed, 1 half-open (probing), 2 open (paused), 3 disabled (410 Gone)",
    labelNames: ['source'] as const,
    registers: [],
  }),
};

export const ATTEMPT_RESULTS = ['delivered', 'failed', 'timeout', 'network_error', 'gone'] as const;

export const BREAKER_VALUES = { closed: 0, half_open: 1, open: 2, disabled: 3 } as const;

/** Puts the callback metrics on this process's /metrics, the configured sources' series at 0. */
export function exposeCallbackMetrics(sources: readonly string[]): void {
  // registerMetric throws on a second registration of a name: a process builds the role once,
  // tests may build it several times.
  const registered = new Set(registry.getMetricsAsArray().map((m) => m.name));
  for (const metric of Object.values(callbackMetrics)) {
    const name = (metric as unknown as { name: string }).name;
    if (!registered.has(name)) registry.registerMetric(metric);
  }
  for (const source of sources) {
    for (const result of ATTEMPT_RESULTS) callbackMetrics.deliveries.inc({ source, result }, 0);
    callbackMetrics.deadLettered.inc({ source }, 0);
    callbackMetrics.latency.zero({ source });
  }
}
