import type { Registry } from 'prom-client';

/**
 * The overview's in-process figures, read from this process's Prometheus registry by metric name
 * (never by object, so a renamed label only empties a chart). Counters are cumulative; to chart
 * them per minute the overview keeps a snapshot per minute while it is being looked at (one per
 * refresh at most), and charts the differences. Nothing runs when nobody looks: no timer.
 *
 * Names read: rentbridge_webhooks_total{source,result}, rentbridge_partner_throttled_total,
 * rentbridge_partner_request_duration_seconds{endpoint,status}, rentbridge_rate_budget_used{lane},
 * rentbridge_rate_budget_left{lane}.
 */

export const METRIC = {
  webhooks: 'rentbridge_webhooks_total',
  throttled: 'rentbridge_partner_throttled_total',
  partnerLatency: 'rentbridge_partner_request_duration_seconds',
  budgetUsed: 'rentbridge_rate_budget_used',
  budgetLeft: 'rentbridge_rate_budget_left',
  sourcePartnerKey: 'rentbridge_source_partner_key',
  sharedKeyTrusted: 'rentbridge_sources_shared_key_trusted',
} as const;

export interface Snapshot {
  /** Epoch seconds. */
  at: number;
  /** Counter totals by series key ("webhooks|source|result", "throttled", "partner|endpoint|status|count"...). */
  totals: Record<string, number>;
}

interface MetricValue {
  value: number;
  labels: Record<string, string | number | undefined>;
  metricName?: string;
}

async function valuesOf(registry: Registry, name: string): Promise<MetricValue[]> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return [];
  const got = (await metric.get()) as { values: MetricValue[] };
  return got.values;
}

const label = (v: MetricValue, name: string): string => String(v.labels[name] ?? '');

export async function takeSnapshot(registry: Registry, at: number): Promise<Snapshot> {
  const totals: Record<string, number> = {};
  const add = (key: string, value: number) => (totals[key] = (totals[key] ?? 0) + value);
  for (const v of await valuesOf(registry, METRIC.webhooks)) {
    add(`webhooks|${label(v, 'source')}|${label(v, 'result')}`, v.value);
  }
  for (const v of await valuesOf(registry, METRIC.throttled)) add('throttled', v.value);
  for (const v of await valuesOf(registry, METRIC.partnerLatency)) {
    const endpoint = label(v, 'endpoint');
    const status = label(v, 'status');
    if (v.metricName?.endsWith('_count')) add(`partner|${endpoint}|${status}|count`, v.value);
    else if (v.metricName?.endsWith('_sum')) add(`partner|${endpoint}|${status}|sum`, v.value);
  }
  return { at, totals };
}

/** Current gauge values by lane: what the rate budget used and has left in this process's view. */
export async function budgetGauges(
  registry: Registry,
): Promise<Array<{ lane: string; used: number; left: number }>> {
  const lanes = new Map<string, { lane: string; used: number; left: number }>();
  const get = (lane: string) => lanes.get(lane) ?? lanes.set(lane, { lane, used: 0, left: 0 }).get(lane)!;
  for (const v of await valuesOf(registry, METRIC.budgetUsed)) get(label(v, 'lane')).used = v.value;
  for (const v of await valuesOf(registry, METRIC.budgetLeft)) get(label(v, 'lane')).left = v.value;
  return [...lanes.values()];
}

/** Which Partner API key acts for each PMS source (the process's PMS_PARTNER_KEYS), by source. */
export async function sourceKeyGauges(registry: Registry): Promise<Array<{ source: string; key: string }>> {
  return (await valuesOf(registry, METRIC.sourcePartnerKey))
    .filter((v) => v.value === 1)
    .map((v) => ({ source: label(v, 'source'), key: label(v, 'key') }))
    .sort((a, b) => a.source.localeCompare(b.source));
}

/** Whether PMS_SHARED_PARTNER_KEY=trusted lets this process's PMS sources share a key. */
export async function sharedKeyTrusted(registry: Registry): Promise<boolean> {
  return (await valuesOf(registry, METRIC.sharedKeyTrusted)).some((v) => v.value === 1);
}

/** Keeps the last snapshot of each minute for the last hour. */
export class SnapshotRing {
  private readonly byMinute = new Map<number, Snapshot>();

  /**
   * @param startedAt epoch seconds when this process's counters were 0 (its start): the first
   * snapshot is charted against that when it lies within the window.
   */
  constructor(
    private readonly startedAt = Math.floor(Date.now() / 1000 - process.uptime()),
    private readonly keepMinutes = 61,
  ) {}

  add(snapshot: Snapshot): void {
    const minute = Math.floor(snapshot.at / 60) * 60;
    this.byMinute.set(minute, snapshot);
    const oldest = minute - this.keepMinutes * 60;
    for (const m of this.byMinute.keys()) if (m < oldest) this.byMinute.delete(m);
  }

  /**
   * Per-minute increase of each counter, as `{ key: [{t, n}] }`: each minute's last snapshot less
   * the one before (the first against 0 at process start, when that is within the window; a
   * counter that went down, i.e. a restart, counts from 0).
   */
  deltas(): Record<string, Array<{ t: number; n: number }>> {
    const minutes = [...this.byMinute.keys()].sort((a, b) => a - b);
    const out: Record<string, Array<{ t: number; n: number }>> = {};
    const first = minutes[0];
    const fromStart = first !== undefined && first - this.startedAt < this.keepMinutes * 60;
    for (let i = fromStart ? 0 : 1; i < minutes.length; i++) {
      const prev = i === 0 ? { at: this.startedAt, totals: {} } : this.byMinute.get(minutes[i - 1]!)!;
      const cur = this.byMinute.get(minutes[i]!)!;
      for (const [key, value] of Object.entries(cur.totals)) {
        const before = prev.totals[key] ?? 0;
        const n = value >= before ? value - before : value;
        (out[key] ??= []).push({ t: minutes[i]!, n });
      }
    }
    return out;
  }

  latest(): Snapshot | undefined {
    const minutes = [...this.byMinute.keys()].sort((a, b) => a - b);
    return minutes.length ? this.byMinute.get(minutes[minutes.length - 1]!) : undefined;
  }
}
