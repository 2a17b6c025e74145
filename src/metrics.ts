import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { logicalTopic } from './topic-prefix.js';

/**
 * Every Prometheus metric rentbridge exposes at /metrics (docs/runbook.md says what each means
 * when it moves). One registry per process; components increment what they own.
 *
 * A process exposes only the metrics of the work it does (issue 33): the metrics below are in no
 * registry until the component that updates them is built and calls `exposeMetrics(group)`. A
 * relay's backlog never shows as a constant 0 on a receiver, where it would read "healthy" forever
 * while rows wait. The component then starts the label sets it knows at 0 (`startAtZero`): a
 * series that appears at its first increment is invisible to `increase()`, so its first event
 * would never alert.
 *
 * Naming rule for labels: a `topic` label is always the logical topic, WITHOUT KAFKA_TOPIC_PREFIX
 * (`commands.rental-payments`, never `prod.commands.rental-payments`): one deployment's dashboards
 * and alert rules (ops/prometheus, ops/grafana) then read the same whatever the prefix. Use
 * `topicLabel` where only the prefixed name is at hand.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'rentbridge_process_' });

/**
 * prom-client's default metrics include three gauges named `..._total`, which `promtool check
 * metrics` refuses (a `_total` suffix is for counters). Each is only the sum over the `type`
 * label of its sibling (`rentbridge_process_nodejs_active_handles{type}`): dropped, use `sum()`.
 */
for (const what of ['handles', 'requests', 'resources'])
  registry.removeSingleMetric(`rentbridge_process_nodejs_active_${what}_total`);

/** The `topic` label of a topic name: KAFKA_TOPIC_PREFIX taken off when the name carries it. */
export const topicLabel = logicalTopic;

/** Registered by `exposeMetrics`, never at import. */
const r: Registry[] = [];

/**
 * Figures read at scrape time by the process that has them: the process serving the console sets
 * `roleLastSeen` (src/ops/role-heartbeat.ts); elsewhere the metric is declared with no series.
 */
export const scrapeHooks: {
  roleLastSeen?: (set: (role: string, seconds: number) => void) => Promise<void>;
  /** The shared budget's reading per source (src/partner/rate-budget-sources.ts), one query per scrape. */
  budgetSources?: () => Promise<BudgetSourceReading[]>;
} = {};

/** One source's line of the shared budget, read from PostgreSQL (every process's waiters and slots). */
export interface BudgetSourceReading {
  source: string;
  waiting: number;
  oldestWaitSeconds: number;
  used: number;
}

async function setFromBudgetSources(
  gauge: Gauge<'source'>,
  value: (reading: BudgetSourceReading) => number,
): Promise<void> {
  const readings = (await scrapeHooks.budgetSources?.()) ?? [];
  gauge.reset();
  for (const reading of readings) gauge.set({ source: reading.source }, value(reading));
}

export const metrics = {
  webhooks: new Counter({
    name: 'rentbridge_webhooks_total',
    help: 'Webhooks received, by source and result (accepted, duplicate, unrouted, unauthorized, invalid, too_large)',
    labelNames: ['source', 'result'] as const,
    registers: r,
  }),
  webhooksUnrouted: new Counter({
    name: 'rentbridge_webhooks_unrouted_total',
    help: 'Signed webhooks of a type rentbridge does not route (kept on inbound.unrouted), by source and type (at most 20 types per source, then other)',
    labelNames: ['source', 'type'] as const,
    registers: r,
  }),
  outboxBacklog: new Gauge({
    name: 'rentbridge_outbox_backlog',
    help: 'Outbox rows not yet published to Kafka',
    registers: r,
  }),
  relayLagSeconds: new Gauge({
    name: 'rentbridge_relay_lag_seconds',
    help: 'Age of the oldest unpublished outbox row',
    registers: r,
  }),
  relayParked: new Counter({
    name: 'rentbridge_relay_parked_total',
    help: 'Outbox rows parked because the broker can never take them (too large), by topic',
    labelNames: ['topic'] as const,
    registers: r,
  }),
  outboxParked: new Gauge({
    name: 'rentbridge_outbox_parked',
    help: 'Outbox rows parked (never published; last_error says why)',
    registers: r,
  }),
  relayStalled: new Gauge({
    name: 'rentbridge_relay_stalled',
    help: '1 when the oldest unpublished outbox row is older than RELAY_STALL_SECONDS (the relay is not making progress)',
    registers: r,
  }),
  erasedSkipped: new Counter({
    name: 'rentbridge_erased_records_skipped_total',
    help: 'Versions of Partner records erased on request that were left out of the tables and changelogs, by path (webhook, poll, resync)',
    labelNames: ['path'] as const,
    registers: r,
  }),
  relayPublished: new Counter({
    name: 'rentbridge_relay_published_total',
    help: 'Outbox rows published to Kafka, by topic',
    labelNames: ['topic'] as const,
    registers: r,
  }),
  pollerLastSuccess: new Gauge({
    name: 'rentbridge_poller_last_success_timestamp_seconds',
    help: 'When the last successful poller pass of a resource finished (freshness)',
    labelNames: ['resource'] as const,
    registers: r,
  }),
  pollerStaleAfter: new Gauge({
    name: 'rentbridge_poller_stale_after_seconds',
    help: 'How old the last successful pass of a resource may be before it is stale: three of its poll intervals, at least 900 s',
    labelNames: ['resource'] as const,
    registers: r,
  }),
  pollerPassProgress: new Gauge({
    name: 'rentbridge_poller_pass_progress_timestamp_seconds',
    help: 'When the pass under way of a resource last read a page; 0 when no pass is under way or it has read none yet',
    labelNames: ['resource'] as const,
    registers: r,
  }),
  pollerRequests: new Counter({
    name: 'rentbridge_poller_requests_total',
    help: 'Partner API requests made by the poller, by resource',
    labelNames: ['resource'] as const,
    registers: r,
  }),
  pollerChanges: new Counter({
    name: 'rentbridge_poller_changes_total',
    help: 'Changes found by the poller, by resource',
    labelNames: ['resource'] as const,
    registers: r,
  }),
  commands: new Counter({
    name: 'rentbridge_commands_total',
    help: 'Commands finished, by command type and final status',
    labelNames: ['command', 'status'] as const,
    registers: r,
  }),
  commandsRefused: new Counter({
    name: 'rentbridge_commands_refused_total',
    help: 'Commands the Partner API refused (outcome rejected), by command type and error code (the codes of spec 7.2, else other)',
    labelNames: ['command', 'code'] as const,
    registers: r,
  }),
  readBacks: new Counter({
    name: 'rentbridge_guard_read_backs_total',
    help: 'Read-backs made by the guard, by command type and verdict (applied, not_applied, unknown)',
    labelNames: ['command', 'verdict'] as const,
    registers: r,
  }),
  deadLetters: new Counter({
    name: 'rentbridge_dead_letters_total',
    help: 'Messages dead-lettered, by topic and reason',
    labelNames: ['topic', 'reason'] as const,
    registers: r,
  }),
  deadLettersIndexed: new Counter({
    name: 'rentbridge_dead_letters_indexed_total',
    help: 'Dead letters stored by the dead-letter indexer (new rows only), by original topic and reason',
    labelNames: ['topic', 'reason'] as const,
    registers: r,
  }),
  budgetUsed: new Gauge({
    name: 'rentbridge_rate_budget_used',
    help: 'Partner API requests taken from the shared budget in the last minute, by lane',
    labelNames: ['lane'] as const,
    registers: r,
  }),
  budgetLeft: new Gauge({
    name: 'rentbridge_rate_budget_left',
    help: 'Partner API requests left in the shared budget for the current minute, by lane',
    labelNames: ['lane'] as const,
    registers: r,
  }),
  budgetWaitSeconds: new Histogram({
    name: 'rentbridge_rate_budget_wait_seconds',
    help: 'Time waited for a slot of the shared budget, by lane',
    labelNames: ['lane'] as const,
    buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60],
    registers: r,
  }),
  budgetSourceWaiting: new Gauge({
    name: 'rentbridge_rate_budget_source_waiting',
    help: 'Commands of each PMS source waiting for a slot of the shared budget (a write or a read-back), in every process',
    labelNames: ['source'] as const,
    registers: r,
    async collect() {
      await setFromBudgetSources(this, (x) => x.waiting);
    },
  }),
  budgetSourceOldestWait: new Gauge({
    name: 'rentbridge_rate_budget_source_oldest_wait_seconds',
    help: 'How long the longest-waiting command of each PMS source has waited for its slot (0: none waits), in every process',
    labelNames: ['source'] as const,
    registers: r,
    async collect() {
      await setFromBudgetSources(this, (x) => x.oldestWaitSeconds);
    },
  }),
  budgetSourceUsed: new Gauge({
    name: 'rentbridge_rate_budget_source_used',
    help: "Partner API requests (writes and read-backs) of each PMS source in the shared budget's last minute, every process together",
    labelNames: ['source'] as const,
    registers: r,
    async collect() {
      await setFromBudgetSources(this, (x) => x.used);
    },
  }),
  budgetSourceRequests: new Counter({
    name: 'rentbridge_rate_budget_source_requests_total',
    help: 'Partner API requests this process took slots for, by PMS source and lane (write, readback)',
    labelNames: ['source', 'lane'] as const,
    registers: r,
  }),
  throttled: new Counter({
    name: 'rentbridge_partner_throttled_total',
    help: '429 responses received from the Partner API',
    registers: r,
  }),
  partnerLatency: new Histogram({
    name: 'rentbridge_partner_request_duration_seconds',
    help: 'Partner API latency, by endpoint (method and path template) and status',
    labelNames: ['endpoint', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: r,
  }),
  sourcePartnerKey: new Gauge({
    name: 'rentbridge_source_partner_key',
    help: 'Which Partner API key acts for each PMS source: 1 for the key in use (own = PMS_PARTNER_KEYS, deployment = PARTNER_ACCESS_KEY), 0 for the other',
    labelNames: ['source', 'key'] as const,
    registers: r,
  }),
  sharedKeyTrusted: new Gauge({
    name: 'rentbridge_sources_shared_key_trusted',
    help: "PMS_SHARED_PARTNER_KEY=trusted lets two or more PMS sources act with a shared Partner API key, so each could reach the others' tenants: 1 when it does, else 0",
    registers: r,
  }),
  customerTokens: new Counter({
    name: 'rentbridge_customer_tokens_total',
    help: 'Customer access-token requests of PMS sources, by source and result',
    labelNames: ['source', 'result'] as const,
    registers: r,
  }),
  roleLastSeen: new Gauge({
    name: 'rentbridge_role_last_seen_seconds',
    help: 'Seconds since a process running the role last reported (every 10 s); 3600 when none did within the hour',
    labelNames: ['role'],
    registers: r,
    async collect() {
      await scrapeHooks.roleLastSeen?.((role, seconds) => this.set({ role }, seconds));
    },
  }),
};

type AnyMetric = (typeof metrics)[keyof typeof metrics];

/** Which metrics each kind of work updates: what a process running that work exposes. */
export const METRIC_GROUPS = {
  receiver: [metrics.webhooks, metrics.webhooksUnrouted, metrics.erasedSkipped],
  /** The process serving the console (src/ops/role-heartbeat.ts). */
  roles: [metrics.roleLastSeen],
  customerTokens: [metrics.customerTokens],
  /** Which key acts for each PMS source: every process that acts for sources (src/partner/source-partners.ts). */
  sourceKeys: [metrics.sourcePartnerKey, metrics.sharedKeyTrusted],
  relay: [
    metrics.outboxBacklog,
    metrics.outboxParked,
    metrics.relayLagSeconds,
    metrics.relayStalled,
    metrics.relayPublished,
    metrics.relayParked,
  ],
  poller: [
    metrics.pollerLastSuccess,
    metrics.pollerPassProgress,
    metrics.pollerStaleAfter,
    metrics.pollerRequests,
    metrics.pollerChanges,
    metrics.erasedSkipped,
  ],
  /** Every process that calls the Partner API through the shared budget. */
  partner: [
    metrics.budgetUsed,
    metrics.budgetLeft,
    metrics.budgetWaitSeconds,
    metrics.throttled,
    metrics.partnerLatency,
  ],
  /** The process whose budget is the deployment's (not the customer tokens' budget): per source. */
  budgetSources: [
    metrics.budgetSourceWaiting,
    metrics.budgetSourceOldestWait,
    metrics.budgetSourceUsed,
    metrics.budgetSourceRequests,
  ],
  commands: [metrics.commands, metrics.commandsRefused, metrics.readBacks, metrics.deadLetters],
  deadLetterIndex: [metrics.deadLettersIndexed],
} as const satisfies Record<string, readonly AnyMetric[]>;
export type MetricGroup = keyof typeof METRIC_GROUPS;

/** Puts a group's metrics on this process's /metrics (idempotent: the same objects each time). */
export function exposeMetrics(...groups: MetricGroup[]): void {
  for (const group of groups) for (const metric of METRIC_GROUPS[group]) registry.registerMetric(metric);
}

/**
 * Creates every series of the cross product of the given label values at 0 (a counter's 0, a
 * histogram's empty buckets), so Prometheus sees the series before its first event and
 * `increase()` counts that event. Gauges are never seeded: a 0 would be a false reading.
 */
export function startAtZero<L extends string>(
  metric: Counter<L> | Histogram<L>,
  values: { [K in L]: readonly string[] },
): void {
  let combos: Array<Record<string, string>> = [{}];
  for (const [name, list] of Object.entries(values) as Array<[string, readonly string[]]>) {
    combos = combos.flatMap((c) => list.map((v) => ({ ...c, [name]: v })));
  }
  for (const labels of combos) {
    if (metric instanceof Counter) metric.inc(labels as Partial<Record<L, string>>, 0);
    else metric.zero(labels as Partial<Record<L, string>>);
  }
}
