import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceWaitItems } from '../../src/ops/overview/attention.js';
import type { OverviewRows } from '../../src/ops/overview/overview-repository.js';
import { SOURCE_WAIT_BOUND_SECONDS } from '../../src/partner/rate-budget-types.js';
import { ROOT } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { serveOverview, type OverviewServer } from '../support/overview-server.js';

/** Issue 54 item 1: "Needs a person now" lists a PMS source whose oldest command waits too long. */

type Line = OverviewRows['budgetSources'][number];
const line = (
  source: string | null,
  waiting: number,
  oldestSeconds: number | null,
  budget = 'partner-api',
): Line => ({
  budget,
  source,
  used: 3,
  waiting,
  oldestSeconds,
});

describe('sourceWaitItems', () => {
  it('lists each source whose oldest wait is past the bound, with its count, the wait and the Partner API card', () => {
    const items = sourceWaitItems({
      budgetSources: [
        line('acme', 4, SOURCE_WAIT_BOUND_SECONDS + 30),
        line('globex', 2, SOURCE_WAIT_BOUND_SECONDS),
        line('initech', 0, null),
        line(null, 5, 600),
        line('umbrella', 1, 2 * 3600),
      ],
    });
    expect(items.map((i) => [i.kind, i.title, i.count, i.href])).toEqual([
      ['source-wait', 'Partner API: commands of umbrella waiting', 1, '#overview/partner'],
      ['source-wait', 'Partner API: commands of acme waiting', 4, '#overview/partner'],
    ]);
    expect(items[1]!.detail).toMatch(/^4 waiting for a slot, the oldest for 90 s \(bound 60 s\)/);
    expect(items[0]!.severity).toBe('warning');
  });

  it("sums a source's waiters over the budgets and keeps its oldest wait", () => {
    const [item, ...more] = sourceWaitItems({
      budgetSources: [line('acme', 2, 10, 'a'), line('acme', 3, 200, 'b')],
    });
    expect(more).toEqual([]);
    expect(item!.count).toBe(5);
    expect(item!.detail).toContain('the oldest for 3 min');
  });

  it('lists none when no source waits past the bound', () => {
    expect(sourceWaitItems({ budgetSources: [line('acme', 9, 59.6), line('globex', 0, null)] })).toEqual([]);
  });

  it('uses the bound of the alert RentbridgeSourceCommandsWaiting', async () => {
    const rules = await readFile(`${ROOT}monitoring/prometheus/alerts.yml`, 'utf8');
    const rule = rules.slice(rules.indexOf('- alert: RentbridgeSourceCommandsWaiting'));
    expect(/expr: (.*)/.exec(rule)?.[1]).toBe(
      `max by (source) (rentbridge_rate_budget_source_oldest_wait_seconds) > ${SOURCE_WAIT_BOUND_SECONDS}`,
    );
  });
});

describe("the overview's attention list on PostgreSQL", () => {
  let database: TestDatabase;
  let served: OverviewServer;

  beforeAll(async () => {
    database = await createTestDatabase();
    served = await serveOverview(database.db);
  });
  afterAll(async () => {
    await served?.close();
    await database?.drop();
  });

  it('lists a source whose budget waiter is older than the bound, and not one that waits less', async () => {
    // Waiters as a process's rate budget writes them (src/partner/rate-budget.ts): acme's has waited
    // 90 s, globex's 5 s; both still alive (expires_at ahead, as the waiting process refreshes it).
    await database.sql.query(
      `INSERT INTO rate_budget_waiters (id, budget, lane, rank, expires_at, source, weight, since)
       VALUES ('w1', 'partner-api', 'write', 0, now() + interval '1 minute', 'acme', 1, now() - interval '90 seconds'),
              ('w2', 'partner-api', 'write', 0, now() + interval '1 minute', 'acme', 1, now() - interval '20 seconds'),
              ('w3', 'partner-api', 'readback', 1, now() + interval '1 minute', 'globex', 1, now() - interval '5 seconds')`,
    );
    const body = await served.overview();
    const waits = body.attention.filter((i) => i.kind === 'source-wait');
    expect(waits).toHaveLength(1);
    expect(waits[0]).toMatchObject({
      title: 'Partner API: commands of acme waiting',
      count: 2,
      href: '#overview/partner',
      action: 'see the stage',
    });
    const waited = Number(
      /^2 waiting for a slot, the oldest for (\d+) s \(bound 60 s\)/.exec(waits[0]!.detail)?.[1],
    );
    expect(waited).toBeGreaterThanOrEqual(90);
    expect(waited).toBeLessThan(120);
    // The link leads to the card that shows the same waiters.
    const partner = body.stages.find((s) => s.id === 'partner')!;
    const figures = Object.fromEntries(partner.figures.map((f) => [f.label, f.value]));
    expect(figures['share of source acme, last minute']).toBe(
      `0 requests (0 %) · 2 waiting, oldest ${waited} s`,
    );
  });

  it('lists none once the waiter is gone', async () => {
    await database.sql.query(`DELETE FROM rate_budget_waiters`);
    const body = await served.overview();
    expect(body.attention.filter((i) => i.kind === 'source-wait')).toEqual([]);
  });
});
