import type { Db } from '../../db/prisma.js';

/**
 * What the console's overview reads from PostgreSQL: a handful of aggregate queries over the last
 * hour, each bounded by an index range or a small table, so that a refresh every few seconds stays
 * cheap (docs/operations.md, "Console: the overview" has the measured cost). Times are minute buckets (epoch
 * seconds); figures are plain numbers.
 */

export interface MinuteCount {
  /** Start of the minute, epoch seconds. */
  t: number;
  n: number;
}

export interface OverviewRows {
  webhooks: Array<MinuteCount & { source: string }>;
  outbox: {
    backlog: number;
    oldestUnpublishedAt: Date | null;
    newestPublishedAt: Date | null;
    /** Rows published in the last 60 s: the relay's rate while it catches up. */
    publishedLastMinute: number;
  };
  published: Array<MinuteCount & { topic: string; maxLagSeconds: number }>;
  /** Commands pending or in flight now. */
  commandsByState: Array<{ state: string; n: number }>;
  commandsFinished: Array<MinuteCount & { state: string }>;
  /** Commands pending or in flight whose row has not changed for `stuckAfterSeconds`. */
  commandsStuck: number;
  attempts: Array<MinuteCount & { kind: string; result: string; avgSeconds: number | null }>;
  deadLettersOpen: Array<{ reason: string; n: number }>;
  deadLettersArriving: Array<MinuteCount & { reason: string }>;
  pollers: Array<{
    resource: string;
    lastStartedAt: Date | null;
    lastSucceededAt: Date | null;
    lastFailedAt: Date | null;
    lastError: string | null;
    /** The pass under way's progress (src/poller/pass-staleness.ts). */
    passPages: number | null;
    passPageCount: number | null;
    lastPageAt: Date | null;
    staleAfterSeconds: number | null;
  }>;
  budget: Array<{ budget: string; lane: string; n: number }>;
  /**
   * Per PMS source (null: calls made for none), its writes and read-backs in the last minute and
   * its commands waiting for a slot, with the oldest wait (issue 52).
   */
  budgetSources: Array<{
    budget: string;
    source: string | null;
    used: number;
    waiting: number;
    oldestSeconds: number | null;
  }>;
  budgetPausedUntil: Date | null;
}

const num = (v: unknown): number => (v == null ? 0 : Number(v));

export async function readOverviewRows(
  db: Db,
  options: { stuckAfterSeconds: number },
): Promise<OverviewRows> {
  const [
    webhooks,
    outbox,
    published,
    commandsByState,
    commandsFinished,
    stuck,
    attempts,
    open,
    arriving,
    pollers,
    budget,
    paused,
  ] = await Promise.all([
    db.$queryRaw<{ source: string; t: number; n: bigint }[]>`
      SELECT source, extract(epoch FROM date_trunc('minute', received_at))::int AS t, count(*) AS n
        FROM webhook_receipts WHERE received_at > now() - interval '1 hour' GROUP BY 1, 2`,
    db.$queryRaw<{ backlog: bigint; oldest: Date | null; newest: Date | null; recent: bigint }[]>`
      SELECT (SELECT count(*) FROM outbox WHERE published_at IS NULL) AS backlog,
             (SELECT min(created_at) FROM outbox WHERE published_at IS NULL) AS oldest,
             (SELECT max(published_at) FROM outbox WHERE published_at IS NOT NULL) AS newest,
             (SELECT count(*) FROM outbox WHERE published_at > now() - interval '60 seconds') AS recent`,
    db.$queryRaw<{ topic: string; t: number; n: bigint; lag: number | null }[]>`
      SELECT topic, extract(epoch FROM date_trunc('minute', published_at))::int AS t, count(*) AS n,
             extract(epoch FROM max(published_at - created_at))::float8 AS lag
        FROM outbox WHERE published_at > now() - interval '1 hour' GROUP BY 1, 2`,
    // Only the states a command passes through: counting final states would read the whole table.
    db.$queryRaw<{ state: string; n: bigint }[]>`
      SELECT state, count(*) AS n FROM commands WHERE state IN ('pending', 'in_flight') GROUP BY 1`,
    db.$queryRaw<{ state: string; t: number; n: bigint }[]>`
      SELECT state, extract(epoch FROM date_trunc('minute', finished_at))::int AS t, count(*) AS n
        FROM commands WHERE finished_at > now() - interval '1 hour' GROUP BY 1, 2`,
    db.$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM commands
       WHERE state IN ('pending', 'in_flight')
         AND updated_at < now() - make_interval(secs => ${options.stuckAfterSeconds})`,
    db.$queryRaw<{ kind: string; result: string | null; t: number; n: bigint; avg: number | null }[]>`
      SELECT kind, coalesce(result, CASE WHEN finished_at IS NULL THEN 'open' ELSE 'failed' END) AS result,
             extract(epoch FROM date_trunc('minute', started_at))::int AS t, count(*) AS n,
             extract(epoch FROM avg(finished_at - started_at))::float8 AS avg
        FROM command_attempts WHERE started_at > now() - interval '1 hour' GROUP BY 1, 2, 3`,
    db.$queryRaw<{ reason: string | null; n: bigint }[]>`
      SELECT reason, count(*) AS n FROM dead_letters WHERE state = 'open' GROUP BY 1`,
    db.$queryRaw<{ reason: string | null; t: number; n: bigint }[]>`
      SELECT reason, extract(epoch FROM date_trunc('minute', indexed_at))::int AS t, count(*) AS n
        FROM dead_letters WHERE indexed_at > now() - interval '1 hour' GROUP BY 1, 2`,
    db.$queryRaw<
      {
        resource: string;
        last_started_at: Date | null;
        last_succeeded_at: Date | null;
        last_failed_at: Date | null;
        last_error: string | null;
        pass_pages: number | null;
        pass_page_count: number | null;
        last_page_at: Date | null;
        stale_after_seconds: number | null;
      }[]
    >`SELECT resource, last_started_at, last_succeeded_at, last_failed_at, last_error,
             pass_pages, pass_page_count, last_page_at, stale_after_seconds
        FROM poller_cursors ORDER BY resource`,
    db.$queryRaw<{ budget: string; lane: string; source: string | null; n: bigint; oldest: number | null }[]>`
      SELECT budget, lane, source, count(*) AS n, NULL::float8 AS oldest FROM rate_budget_slots
       WHERE taken_at > now() - interval '1 minute' GROUP BY 1, 2, 3
      UNION ALL
      SELECT budget, 'waiting', source, count(*), extract(epoch FROM now() - min(since))::float8
        FROM rate_budget_waiters WHERE expires_at > now() AND lane <> 'poll' GROUP BY 1, 3`,
    db.$queryRaw<{ paused_until: Date | null }[]>`
      SELECT max(paused_until) AS paused_until FROM rate_budget_state WHERE paused_until > now()`,
  ]);
  const o = outbox[0];
  return {
    webhooks: webhooks.map((r) => ({ source: r.source, t: num(r.t), n: num(r.n) })),
    outbox: {
      backlog: num(o?.backlog),
      oldestUnpublishedAt: o?.oldest ?? null,
      newestPublishedAt: o?.newest ?? null,
      publishedLastMinute: num(o?.recent),
    },
    published: published.map((r) => ({
      topic: r.topic,
      t: num(r.t),
      n: num(r.n),
      maxLagSeconds: num(r.lag),
    })),
    commandsByState: commandsByState.map((r) => ({ state: r.state, n: num(r.n) })),
    commandsFinished: commandsFinished.map((r) => ({ state: r.state, t: num(r.t), n: num(r.n) })),
    commandsStuck: num(stuck[0]?.n),
    attempts: attempts.map((r) => ({
      kind: r.kind,
      result: r.result ?? 'open',
      t: num(r.t),
      n: num(r.n),
      avgSeconds: r.avg == null ? null : Number(r.avg),
    })),
    deadLettersOpen: open.map((r) => ({ reason: r.reason ?? '(none)', n: num(r.n) })),
    deadLettersArriving: arriving.map((r) => ({ reason: r.reason ?? '(none)', t: num(r.t), n: num(r.n) })),
    pollers: pollers.map((r) => ({
      resource: r.resource,
      lastStartedAt: r.last_started_at,
      lastSucceededAt: r.last_succeeded_at,
      lastFailedAt: r.last_failed_at,
      lastError: r.last_error,
      passPages: r.pass_pages,
      passPageCount: r.pass_page_count,
      lastPageAt: r.last_page_at,
      staleAfterSeconds: r.stale_after_seconds,
    })),
    budget: aggregate(
      budget.filter((r) => r.lane !== 'waiting'),
      (r) => `${r.budget}|${r.lane}`,
    ).map(([r, n]) => ({ budget: r.budget, lane: r.lane, n })),
    budgetSources: budgetSources(budget),
    budgetPausedUntil: paused[0]?.paused_until ?? null,
  };
}

/** Sums `n` of the rows that share a key (the slots' rows come per source too). */
function aggregate<R extends { n: bigint }>(rows: R[], key: (r: R) => string): Array<[R, number]> {
  const by = new Map<string, [R, number]>();
  for (const r of rows) {
    const k = key(r);
    const had = by.get(k);
    by.set(k, [had?.[0] ?? r, (had?.[1] ?? 0) + num(r.n)]);
  }
  return [...by.values()];
}

/**
 * The budget's rows come as slots by lane and source, and (lane `waiting`) the waiters of writes
 * and read-backs by source: one statement, so the overview's count of statements stays as it was.
 */
function budgetSources(
  rows: Array<{ budget: string; lane: string; source: string | null; n: bigint; oldest: number | null }>,
): OverviewRows['budgetSources'] {
  const by = new Map<string, OverviewRows['budgetSources'][number]>();
  for (const r of rows) {
    if (r.lane === 'poll' || r.lane === 'external') continue;
    const k = `${r.budget}|${r.source ?? ''}`;
    const line = by.get(k) ?? {
      budget: r.budget,
      source: r.source,
      used: 0,
      waiting: 0,
      oldestSeconds: null,
    };
    if (r.lane === 'waiting') {
      line.waiting += num(r.n);
      line.oldestSeconds = r.oldest;
    } else line.used += num(r.n);
    by.set(k, line);
  }
  return [...by.values()];
}

/** How many SQL statements one overview refresh sends (reported with the overview). */
export const OVERVIEW_QUERY_COUNT = 12;
