import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Overview } from '../../src/ops/overview/overview.js';
import { serveOverview, stageOf, type OverviewServer } from '../support/overview-server.js';
import { createPollerHarness, type PollerHarness } from '../poller/poller-harness.js';

/**
 * Issue 31 item 8: the Outbox and Poller stages chart the last hour like the other five: the outbox
 * backlog at the end of each minute, and per resource the age of its last successful pass. Real
 * passes of the poller (at moved clocks) against the sandbox, real rows, served by the overview API.
 */
describe('overview history: outbox backlog and poller pass ages over the hour', () => {
  let h: PollerHarness;
  let served: OverviewServer;
  const MIN = 60_000;

  beforeAll(async () => {
    h = await createPollerHarness();
    served = await serveOverview(h.database.db);
  });

  afterAll(async () => {
    await served?.close();
    await h?.close();
  });

  const overview = () => served.overview();

  /** The value of a series at the end of the minute that holds `msAgo` before now. */
  function at(body: Overview, values: Array<number | null>, msAgo: number): number | null {
    const t = Math.floor((Date.now() - msAgo) / 60_000) * 60;
    const i = body.minutes.indexOf(t);
    expect(i, `minute ${t} on the axis`).toBeGreaterThanOrEqual(0);
    return values[i]!;
  }

  const stage = stageOf;

  it('keeps each successful pass of the hour before the latest and the last one before it; prunes the rest', async () => {
    let clock = new Date();
    const poller = h.poller({ now: () => clock });
    const passAt = async (minutesAgo: number) => {
      clock = new Date(Date.now() - minutesAgo * MIN);
      const [summary] = await poller.runOnce('applications');
      expect(summary).toMatchObject({ resource: 'applications', outcome: 'completed' });
    };
    for (const m of [150, 120, 90, 50, 20, 5]) await passAt(m);
    clock = new Date(Date.now() - 10 * MIN);
    await poller.runOnce('bank_accounts');

    const { rows } = await h.database.sql.query<{ resource: string; age: number }>(
      `SELECT resource, round(extract(epoch FROM now() - succeeded_at) / 60)::int AS age
         FROM poller_passes ORDER BY resource, succeeded_at`,
    );
    // 150 and 120 minutes ago are gone: 90 is the last pass over an hour before the latest (5).
    expect(rows).toEqual([
      { resource: 'applications', age: 90 },
      { resource: 'applications', age: 50 },
      { resource: 'applications', age: 20 },
      { resource: 'applications', age: 5 },
      { resource: 'bank_accounts', age: 10 },
    ]);
  });

  it('charts per resource the age of its last successful pass at the end of each minute', async () => {
    const body = await overview();
    const chart = stage(body, 'poller').charts[0]!;
    expect(chart).toMatchObject({ kind: 'level', unit: 's' });
    expect(chart.series.map((s) => s.name)).toEqual(['applications', 'bank_accounts']);
    const apps = chart.series[0]!.values;
    const bank = chart.series[1]!.values;
    expect(apps).toHaveLength(body.minutes.length);
    const near = (v: number | null, seconds: number) => {
      expect(v).not.toBeNull();
      expect(Math.abs(v! - seconds), `${v} s vs ${seconds} s`).toBeLessThanOrEqual(61);
    };
    near(at(body, apps, 55 * MIN), 35 * 60); // since the pass 90 minutes ago
    near(at(body, apps, 30 * MIN), 20 * 60); // since the one 50 minutes ago
    near(at(body, apps, 8 * MIN), 12 * 60); // since the one 20 minutes ago (5 is later)
    near(apps[apps.length - 1]!, 5 * 60);
    // bank_accounts had no pass before 10 minutes ago: nothing is known before it.
    expect(at(body, bank, 30 * MIN)).toBeNull();
    near(bank[bank.length - 1]!, 10 * 60);
  });

  it('charts the outbox backlog at the end of each minute from the rows created and published', async () => {
    const row = (createdAgo: number, publishedAgo: number | null) =>
      h.database.sql.query(
        `INSERT INTO outbox (event_id, topic, key, type, source, data, created_at, published_at)
         VALUES (gen_random_uuid(), 'partner.applications', 'k', 't', '/test', '{}',
                 now() - make_interval(mins => $1), now() - make_interval(mins => $2))`,
        [createdAgo, publishedAgo],
      );
    await h.database.sql.query(`DELETE FROM outbox`);
    await row(120, 70); // published before the hour: in no minute
    await row(90, 10);
    await row(50, 30);
    await row(20, null);
    const body = await overview();
    const chart = stage(body, 'outbox').charts[0]!;
    expect(chart).toMatchObject({ kind: 'level' });
    const backlog = chart.series[0]!.values;
    expect(backlog).toHaveLength(body.minutes.length);
    expect(at(body, backlog, 55 * MIN)).toBe(1); // 90-10
    expect(at(body, backlog, 40 * MIN)).toBe(2); // 90-10, 50-30
    expect(at(body, backlog, 25 * MIN)).toBe(1); // 90-10
    expect(at(body, backlog, 15 * MIN)).toBe(2); // 90-10, 20-
    expect(backlog[backlog.length - 1]).toBe(1); // 20-, as the figure says
    expect(stage(body, 'outbox').figures[0]).toEqual({ label: 'backlog (unpublished rows)', value: 1 });
  });
});
