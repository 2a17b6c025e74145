/**
 * The figures of `npm run bench -- fairness` (bench/fairness.ts), from what it recorded: when each
 * payment's webhook was sent and its outcome came, by source. Pure: no I/O.
 */

export interface Payment {
  source: string;
  sentAt: number;
  /** When its (first) outcome was read from Kafka; undefined while none came. */
  outcomeAt?: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Latencies webhook → outcome, in seconds, sorted (payments with an outcome only). */
export function latencies(payments: readonly Payment[]): number[] {
  return payments
    .filter((p) => p.outcomeAt !== undefined)
    .map((p) => (p.outcomeAt! - p.sentAt) / 1000)
    .sort((a, b) => a - b);
}

/** Jain's fairness index of `x`: 1 when all are equal, 1/n when one has everything. */
export function jain(x: readonly number[]): number {
  const sum = x.reduce((a, b) => a + b, 0);
  const squares = x.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 1 : (sum * sum) / (x.length * squares);
}

/**
 * Weighted max-min fair shares of `total` among sources that asked for `demand` each: a source
 * that asks for less than its weighted share gets what it asks, and the rest is shared again.
 */
export function fairShares(
  total: number,
  demand: Readonly<Record<string, number>>,
  weight: (source: string) => number,
): Record<string, number> {
  const share: Record<string, number> = {};
  let left = total;
  let open = Object.keys(demand).filter((s) => demand[s]! > 0);
  while (open.length > 0 && left > 1e-9) {
    const weights = open.reduce((a, s) => a + weight(s), 0);
    const capped = open.filter((s) => demand[s]! - (share[s] ?? 0) <= (left * weight(s)) / weights);
    if (capped.length === 0) {
      for (const s of open) share[s] = (share[s] ?? 0) + (left * weight(s)) / weights;
      break;
    }
    for (const s of capped) {
      left -= demand[s]! - (share[s] ?? 0);
      share[s] = demand[s]!;
    }
    open = open.filter((s) => !capped.includes(s));
  }
  return share;
}

export interface BusyWindow {
  from: number;
  to: number;
  /** Outcomes per source inside the window. */
  served: Record<string, number>;
  /** Payments per source that waited inside the window (sent before its end, outcome after its start). */
  demand: Record<string, number>;
  /** Jain's index of each source's outcomes over its weighted max-min fair share. */
  jain: number;
}

/**
 * The busy window: from the moment the last source sent its first webhook to the moment the first
 * source had its last outcome, while every source had payments waiting.
 */
export function busyWindow(
  bySource: Readonly<Record<string, Payment[]>>,
  weight: (source: string) => number,
): BusyWindow {
  const sources = Object.keys(bySource);
  const from = Math.max(...sources.map((s) => Math.min(...bySource[s]!.map((p) => p.sentAt))));
  const to = Math.min(...sources.map((s) => Math.max(...bySource[s]!.map((p) => p.outcomeAt ?? Infinity))));
  const served: Record<string, number> = {};
  const demand: Record<string, number> = {};
  for (const s of sources) {
    const inWindow = (p: Payment) => p.outcomeAt !== undefined && p.outcomeAt >= from && p.outcomeAt <= to;
    served[s] = bySource[s]!.filter(inWindow).length;
    demand[s] = bySource[s]!.filter((p) => p.sentAt <= to && (p.outcomeAt ?? Infinity) >= from).length;
  }
  const total = Object.values(served).reduce((a, b) => a + b, 0);
  const fair = fairShares(total, demand, weight);
  return {
    from,
    to,
    served,
    demand,
    jain: jain(sources.map((s) => (fair[s] ? served[s]! / fair[s] : 1))),
  };
}
