import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metrics } from '../../src/metrics.js';
import type { Stage } from '../../src/ops/overview/overview.js';
import type { PollerHooks } from '../../src/poller/resource-pass.js';
import { serveOverview, type OverviewServer } from '../support/overview-server.js';
import { createPollerHarness, type PollerHarness } from './poller-harness.js';

/**
 * A long pass is not a stalled one: while its pages arrive, the overview's poller stage says
 * `moving` with the pass's progress, however old the last success; once its pages stop for
 * POLLER_STALE_SECONDS it says `stalled` (src/poller/pass-staleness.ts). Real passes against the
 * sandbox, real poller_cursors rows, the overview read over HTTP while a pass is between pages.
 */
describe('the poller stage while a pass is under way', () => {
  let h: PollerHarness;
  let served: OverviewServer;
  const MIN = 60_000;
  const perPage = 2;

  beforeAll(async () => {
    h = await createPollerHarness();
    served = await serveOverview(h.database.db);
    // Five records: three pages of two.
    await h.control.addRecords(
      'applications',
      Array.from({ length: 5 }, () => ({ status: 'submitted' })),
    );
  });

  afterAll(async () => {
    await served?.close();
    await h?.close();
  });

  const pollerStage = () => served.stage('poller');

  const progressGauge = async () =>
    (await metrics.pollerPassProgress.get()).values.find((v) => v.labels.resource === 'applications')?.value;

  /** Runs a pass of applications on `clock`, calling `atPage2` between its second and third page. */
  async function passWith(clock: () => Date, atPage2: () => Promise<void>) {
    const hooks: PollerHooks = {
      afterPage: async ({ page }) => {
        if (page === 2) await atPage2();
      },
    };
    const [summary] = await h.poller({ perPage, now: clock, hooks }).runOnce('applications');
    expect(summary).toMatchObject({ outcome: 'completed', stats: { pages: 3, pageCount: 3 } });
  }

  it('says stalled once the last success is older than the limit and no pass is under way', async () => {
    const twoHoursAgo = new Date(Date.now() - 120 * MIN);
    const [summary] = await h.poller({ perPage, now: () => twoHoursAgo }).runOnce('applications');
    expect(summary?.outcome).toBe('completed');
    const stage = await pollerStage();
    expect(stage.status).toBe('stalled');
    expect(stage.figures).toEqual([{ label: 'applications', value: '⚠ last success 2 h ago' }]);
  });

  it('judges a resource by its own interval: polled every 30 minutes, it is late after three of them', async () => {
    const staleAfter = async () =>
      (await metrics.pollerStaleAfter.get()).values.find((v) => v.labels.resource === 'applications')?.value;
    const passAt = async (minutesAgo: number) => {
      const at = new Date(Date.now() - minutesAgo * MIN);
      const poller = h.poller({ perPage, now: () => at, intervals: { applications: 1800 } });
      expect((await poller.runOnce('applications'))[0]?.outcome).toBe('completed');
    };
    // 40 minutes after its last success: past the 15 minutes of a 5-minute resource, not late here.
    await passAt(40);
    expect(await staleAfter()).toBe(5400);
    let stage = await pollerStage();
    expect(stage.status).toBe('moving');
    expect(stage.figures).toEqual([{ label: 'applications', value: 'last success 40 min ago' }]);
    // Past three intervals (90 minutes): stalled.
    await passAt(95);
    stage = await pollerStage();
    expect(stage.status).toBe('stalled');
    expect(stage.figures).toEqual([{ label: 'applications', value: '⚠ last success 95 min ago' }]);
  });

  it('says stalled when the pass under way has had no page for longer than the limit', async () => {
    // The pass's start and pages are recorded 20 minutes ago, a second apart: its pages stopped then.
    let at = Date.now() - 20 * MIN;
    let seen: Stage | undefined;
    await passWith(
      () => new Date((at += 1000)),
      async () => {
        seen = await pollerStage();
      },
    );
    expect(seen?.status).toBe('stalled');
    expect(seen?.note).toBe('stale or failing: applications');
    expect(seen?.figures[0]?.value).toBe('⚠ pass under way: page 2 of 3, 20 min ago');
  });

  it('says moving, with the pass’s progress, while its pages arrive, though the last success is old', async () => {
    let seen: Stage | undefined;
    let gauge: number | undefined;
    const before = Math.floor(Date.now() / 1000);
    await passWith(
      () => new Date(),
      async () => {
        seen = await pollerStage();
        gauge = await progressGauge();
      },
    );
    // The last success (the pass before) is 20 minutes old: over the limit, but this pass moves.
    expect(seen?.status).toBe('moving');
    expect(seen?.note).toBe('pass under way: applications page 2 of 3');
    expect(seen?.figures[0]?.value).toMatch(/^pass under way: page 2 of 3, \d+ s ago$/);
    // The alert's input: the pass under way showed progress now; 0 once it has ended.
    expect(gauge).toBeGreaterThanOrEqual(before);
    expect(await progressGauge()).toBe(0);

    // Ended: judged by its success again.
    const after = await pollerStage();
    expect(after.status).toBe('moving');
    expect(after.figures[0]?.value).toMatch(/^last success \d+ s ago$/);
  });
});
