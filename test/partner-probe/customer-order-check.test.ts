import { describe, expect, it } from 'vitest';
import { CUSTOMERS_NEWEST_FIRST } from '../../src/partner/assumptions.js';
import { check } from '../../src/partner-probe/checks/customers-newest-first.js';
import type { ProbeContext } from '../../src/partner-probe/probe-context.js';
import type { ProbeRow } from '../../src/partner-probe/probe-types.js';

/**
 * The probe's customer-order check (issue 30) against platforms the sandbox cannot play: a clock
 * that steps back, a list out of order, customers without created_at. The sandbox's own orderings
 * (both tie directions, both precisions) are in probe.test.ts; here the check must say
 * `does_not_hold` or `could_not_tell` where the read-back's proof would not stand.
 */

type Rec = Record<string, unknown>;

/**
 * A platform whose customers get the given `created_at` values in turn, listed by `list` (the
 * stored customers, in creation order, to the page the platform answers).
 */
function platform(stamps: Array<string | undefined>, list: (created: Rec[]) => Rec[]) {
  const created: Rec[] = [];
  const rows: ProbeRow[] = [];
  let n = 0;
  const ctx = {
    options: { write: { customers: true } },
    progress: () => undefined,
    pollMs: 1,
    waitLimit: 50,
    add: (row: ProbeRow) => rows.push(row),
    http: {
      call: async (method: string, _path: string, options: { body?: Rec } = {}) => {
        n += 1;
        if (method === 'POST') {
          const stamp = stamps[created.length];
          const record = { id: 100 + created.length, ...options.body, ...(stamp && { created_at: stamp }) };
          created.push(record);
          return { status: 201, body: record, requestId: `req-${n}` };
        }
        return { status: 200, body: { items: list(created) }, requestId: `req-${n}` };
      },
    },
  } as unknown as ProbeContext;
  return { ctx, rows };
}

const row = (rows: ProbeRow[], step: string) => rows.find((r) => r.step === step)!;

describe('the probe check of the customer order', () => {
  it('holds, with ascending ties and seconds, for a list newest first with ties by ascending id', async () => {
    const { ctx, rows } = platform(['2026-11-25T04:00:00Z', '2026-11-25T04:00:00Z'], (c) =>
      [...c].sort((a, b) => (a.created_at === b.created_at ? Number(a.id) - Number(b.id) : 0)),
    );
    await check(ctx, CUSTOMERS_NEWEST_FIRST);
    expect(row(rows, 'customer order')).toMatchObject({
      result: 'holds',
      guard_assumption: 'customers_newest_first',
    });
    expect(row(rows, 'customer tie-break')).toMatchObject({ result: 'holds', observed: 'ascending' });
    expect(row(rows, 'created_at precision')).toMatchObject({ result: 'holds', observed: 'seconds' });
  });

  it('does not hold when the customer created second shows an older created_at (a clock stepped back)', async () => {
    const { ctx, rows } = platform(['2026-11-25T04:00:01.500Z', '2026-11-25T04:00:01.200Z'], (c) => [...c]);
    await check(ctx, CUSTOMERS_NEWEST_FIRST);
    expect(row(rows, 'customer order')).toMatchObject({ result: 'does_not_hold' });
    expect(row(rows, 'customer order').evidence).toMatch(/shows an older created_at/);
  });

  it('does not hold when the newer customer is listed after the older one', async () => {
    const { ctx, rows } = platform(['2026-11-25T04:00:01.200Z', '2026-11-25T04:00:01.500Z'], (c) => [...c]);
    await check(ctx, CUSTOMERS_NEWEST_FIRST);
    expect(row(rows, 'customer order')).toMatchObject({ result: 'does_not_hold' });
    expect(row(rows, 'customer order').evidence).toMatch(/not sorted by created_at/);
  });

  it('cannot tell, on any of its three rows, when the customers listed show no created_at', async () => {
    const { ctx, rows } = platform([undefined, undefined], (c) => [...c].reverse());
    await check(ctx, CUSTOMERS_NEWEST_FIRST);
    expect(rows.map((r) => [r.step, r.result])).toEqual([
      ['customer order', 'could_not_tell'],
      ['customer tie-break', 'could_not_tell'],
      ['created_at precision', 'could_not_tell'],
    ]);
    expect(row(rows, 'customer order').evidence).toMatch(/without created_at/);
  });
});
