import type { Db } from '../../db/prisma.js';
import type { MinuteCount } from './overview-repository.js';

/**
 * The history behind the overview's Outbox and Poller charts (issue 31 item 8), read like the other
 * charts' from rows that carry their own times, so nothing samples in the background:
 *
 * - the outbox backlog of each minute is the backlog now, plus the rows published since, less the
 *   rows created since (outbox.created_at, outbox.published_at). Pruning removes only rows published
 *   over OUTBOX_RETENTION_HOURS (at least 1 h) ago, which count in no minute of the hour. One
 *   statement, so the three counts come from one snapshot.
 * - each poller resource's successful passes are in poller_passes (written with its cursor, pruned
 *   by the poller to the hour before its latest pass and the last one before that).
 */

export interface OutboxFlowRows {
  /** Rows with published_at IS NULL (parked rows too): the overview's backlog figure. */
  backlog: number;
  created: MinuteCount[];
  published: MinuteCount[];
}

export interface PollerPassRow {
  resource: string;
  succeededAt: Date;
}

const num = (v: unknown): number => (v == null ? 0 : Number(v));

export async function readOutboxFlow(db: Db): Promise<OutboxFlowRows> {
  // Every row created in the last hour is unpublished or published since: the OR lets the planner
  // use the (published_at, id) index for both, as the backlog and the relay-lag queries do.
  const rows = await db.$queryRaw<Array<{ backlog: bigint; t: number | null; c: bigint; p: bigint }>>`
    WITH backlog AS (SELECT count(*) AS n FROM outbox WHERE published_at IS NULL),
         created AS (
           SELECT extract(epoch FROM date_trunc('minute', created_at))::int AS t, count(*) AS n
             FROM outbox
            WHERE (published_at IS NULL OR published_at > now() - interval '1 hour')
              AND created_at > now() - interval '1 hour'
            GROUP BY 1),
         published AS (
           SELECT extract(epoch FROM date_trunc('minute', published_at))::int AS t, count(*) AS n
             FROM outbox WHERE published_at > now() - interval '1 hour' GROUP BY 1)
    SELECT backlog.n AS backlog, m.t, coalesce(m.c, 0) AS c, coalesce(m.p, 0) AS p
      FROM backlog
      LEFT JOIN (SELECT t, created.n AS c, published.n AS p FROM created FULL JOIN published USING (t)) m
        ON true`;
  return {
    backlog: num(rows[0]?.backlog),
    created: rows.filter((r) => r.t != null).map((r) => ({ t: num(r.t), n: num(r.c) })),
    published: rows.filter((r) => r.t != null).map((r) => ({ t: num(r.t), n: num(r.p) })),
  };
}

/** Each resource's successful passes after `since`, and its last one at or before `since`. */
export async function readPollerPasses(db: Db, since: Date): Promise<PollerPassRow[]> {
  const rows = await db.$queryRaw<Array<{ resource: string; succeeded_at: Date }>>`
    SELECT resource, succeeded_at FROM poller_passes WHERE succeeded_at > ${since}
    UNION ALL
    SELECT DISTINCT ON (resource) resource, succeeded_at FROM poller_passes
     WHERE succeeded_at <= ${since} ORDER BY resource, succeeded_at DESC`;
  return rows.map((r) => ({ resource: r.resource, succeededAt: r.succeeded_at }));
}

/**
 * The backlog at the end of each minute of `minutes` (the last one: now), from the backlog now and
 * the rows created and published per minute since.
 */
export function backlogPerMinute(flow: OutboxFlowRows, minutes: number[]): number[] {
  const index = new Map(minutes.map((m, i) => [m, i]));
  const change = minutes.map(() => 0);
  for (const r of flow.created) {
    const i = index.get(r.t);
    if (i !== undefined) change[i]! += r.n;
  }
  for (const r of flow.published) {
    const i = index.get(r.t);
    if (i !== undefined) change[i]! -= r.n;
  }
  const out = minutes.map(() => 0);
  let level = flow.backlog;
  for (let i = minutes.length - 1; i >= 0; i--) {
    out[i] = Math.max(0, level);
    level -= change[i]!;
  }
  return out;
}

/**
 * Per resource, the age in seconds of its last successful pass at the end of each minute (the last
 * one: `now`), or null while no pass is known by then.
 */
export function passAgePerMinute(
  passes: PollerPassRow[],
  minutes: number[],
  now: number,
): Array<{ name: string; values: Array<number | null> }> {
  const byResource = new Map<string, number[]>();
  for (const p of passes) {
    const list = byResource.get(p.resource) ?? byResource.set(p.resource, []).get(p.resource)!;
    list.push(p.succeededAt.getTime());
  }
  return [...byResource.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, times]) => {
      times.sort((a, b) => a - b);
      let j = -1;
      const values = minutes.map((m) => {
        const end = Math.min((m + 60) * 1000, now);
        while (j + 1 < times.length && times[j + 1]! <= end) j++;
        return j < 0 ? null : Math.max(0, Math.round((end - times[j]!) / 1000));
      });
      return { name, values };
    });
}
