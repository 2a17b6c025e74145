import type { Config } from '../config/config.js';
import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import { type BudgetSourceReading, exposeMetrics, scrapeHooks } from '../metrics.js';

/** The label of requests made for no PMS source (the poller, resync, the console's reads). */
export const NO_SOURCE = 'none';

/** How the budget shares itself by source (issue 52, decision 055). */
export interface SourceShares {
  /** PMS_WEIGHTS: a source's weight in the round-robin; a source not named weighs 1. */
  weights?: Readonly<Record<string, number>>;
  /** The configured sources: their series on /metrics start at 0, before their first request. */
  sources?: readonly string[];
}

/** The deployment's shares: PMS_WEIGHTS, and every source the configuration names. */
export function budgetShares(
  config: Pick<Config, 'PMS_WEIGHTS' | 'PMS_WEBHOOK_SECRETS' | 'PMS_PARTNER_KEYS'>,
): SourceShares {
  const named = [config.PMS_WEBHOOK_SECRETS, config.PMS_WEIGHTS, config.PMS_PARTNER_KEYS].flatMap(
    Object.keys,
  );
  return { weights: config.PMS_WEIGHTS, sources: [...new Set(named)].sort() };
}

export function weightOf(shares: SourceShares, source: string | undefined): number {
  if (source === undefined) return 1;
  const weight = shares.weights?.[source];
  return weight !== undefined && weight > 0 ? weight : 1;
}

/**
 * Reads, per source, every process's waiters and the window's slots: what /metrics shows per source
 * (commands waiting, the oldest wait, the requests used) and the console's Partner API stage.
 */
export async function readBudgetSources(
  db: Db,
  budget: string,
  windowSeconds: number,
  sources: readonly string[] = [],
): Promise<BudgetSourceReading[]> {
  const rows = await db.$queryRaw<
    { source: string | null; waiting: number; oldest_s: number | null; used: number }[]
  >`
    SELECT source, sum(waiting)::int AS waiting, max(oldest_s)::float8 AS oldest_s, sum(used)::int AS used
    FROM (
      SELECT source, 1 AS waiting, extract(epoch FROM clock_timestamp() - since) AS oldest_s, 0 AS used
      FROM rate_budget_waiters
      WHERE budget = ${budget} AND lane <> 'poll' AND expires_at > clock_timestamp()
      UNION ALL
      SELECT source, 0, NULL, 1 FROM rate_budget_slots
      WHERE budget = ${budget} AND lane IN ('write', 'readback')
        AND taken_at > clock_timestamp() - make_interval(secs => ${windowSeconds}::float8)
    ) x
    GROUP BY source`;
  const bySource = new Map<string, BudgetSourceReading>(
    sources.map((source) => [source, { source, waiting: 0, oldestWaitSeconds: 0, used: 0 }]),
  );
  for (const row of rows) {
    const source = row.source ?? NO_SOURCE;
    bySource.set(source, {
      source,
      waiting: row.waiting,
      oldestWaitSeconds: Math.max(0, row.oldest_s ?? 0),
      used: row.used,
    });
  }
  return [...bySource.values()].sort((a, b) => a.source.localeCompare(b.source));
}

/**
 * Puts the per-source gauges on /metrics, read at scrape time: one query for the three of them
 * (kept for a second), and a failed read shows the configured sources at their last value rather
 * than failing the scrape.
 */
export function exposeBudgetSources(options: {
  db: Db;
  budget: string;
  windowSeconds: number;
  sources: readonly string[];
  logger: Logger;
}): void {
  exposeMetrics('budgetSources');
  let cached: { at: number; reading: Promise<BudgetSourceReading[]> } | undefined;
  let last: BudgetSourceReading[] = [];
  scrapeHooks.budgetSources = () => {
    if (!cached || Date.now() - cached.at > 1000) {
      const reading = readBudgetSources(options.db, options.budget, options.windowSeconds, options.sources)
        .then((r) => (last = r))
        .catch((error: unknown) => {
          options.logger.warn({ err: error }, 'rate budget could not read its shares by source');
          return last;
        });
      cached = { at: Date.now(), reading };
    }
    return cached.reading;
  };
}
