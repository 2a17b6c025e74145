import { setTimeout as sleep } from 'node:timers/promises';
import { CREATE_CUSTOMER_PATH, CUSTOMERS_NEWEST_FIRST } from '../../partner/assumptions.js';
import { LIST_PATHS } from '../../partner/endpoints.js';
import type { ProbeContext } from '../probe-context.js';
import { describeAnswer, itemsOf, obj } from '../probe-types.js';
import { addGuardRow, type GuardCheck } from './check.js';

type Rec = Record<string, unknown>;

const CREATED_AT = CUSTOMERS_NEWEST_FIRST.orderBy;

const at = (v: unknown): number | null => {
  if (typeof v !== 'string') return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t;
};

/** `…:22.123Z` has a fraction; `…:22Z` and `…:22.000Z` (read as "to the second") do not. */
const subSecond = (v: unknown) => typeof v === 'string' && /\.\d*[1-9]\d*(Z|[+-]\d\d:?\d\d)?$/.test(v);

interface Walk {
  ids: string[];
  created: Rec[];
  tie: { first: Rec; second: Rec } | null;
  orderOk: boolean;
  orderEvidence: string;
  failed: string | null;
}

/** Two customers, one right after the other; `failed` when the platform refused one. */
async function createPair(ctx: ProbeContext, walk: Walk, stamp: string, pair: number): Promise<Rec[]> {
  const made: Rec[] = [];
  for (const which of ['a', 'b']) {
    const a = await ctx.http.call('POST', CREATE_CUSTOMER_PATH, {
      body: {
        first_name: 'Rentbridge',
        last_name: `Probe ${which.toUpperCase()}`,
        email: `rentbridge-probe-${stamp}-${pair}${which}@example.com`,
        phone: '5550000000',
      },
    });
    walk.ids.push(a.requestId);
    if (a.status >= 300) {
      walk.failed = `creating a customer answered ${describeAnswer(a)}`;
      return made;
    }
    made.push(obj(a.body));
  }
  return made;
}

/** The newest-first list, read until both customers show (a lagging list shows them later). */
async function listBoth(ctx: ProbeContext, walk: Walk, both: Rec[]): Promise<Rec[] | null> {
  const started = Date.now();
  for (;;) {
    const list = await ctx.http.call('GET', LIST_PATHS[CUSTOMERS_NEWEST_FIRST.collection], {
      query: {
        order_by: CUSTOMERS_NEWEST_FIRST.orderBy,
        order_direction: CUSTOMERS_NEWEST_FIRST.orderDirection,
        per_page: 100,
      },
    });
    walk.ids.push(list.requestId);
    const items = itemsOf(list.body);
    if (both.every((c) => items.some((r) => String(r.id) === String(c.id)))) return items;
    if (Date.now() - started > ctx.waitLimit) {
      walk.failed = `the two customers created were not both listed within ${ctx.waitLimit} ms`;
      return null;
    }
    await sleep(ctx.pollMs);
  }
}

/** Judges one pair as listed; false when the walk is over (order broken, or a field missing). */
function judgePair(walk: Walk, items: Rec[], a: Rec, b: Rec): boolean {
  const ia = items.findIndex((r) => String(r.id) === String(a.id));
  const ib = items.findIndex((r) => String(r.id) === String(b.id));
  const la = items[ia]!;
  const lb = items[ib]!;
  const ta = at(la[CREATED_AT]);
  const tb = at(lb[CREATED_AT]);
  if (ta === null || tb === null) {
    walk.failed = `a customer is listed without ${CREATED_AT} (${String(la[CREATED_AT])}, ${String(lb[CREATED_AT])})`;
    return false;
  }
  const times = items.map((r) => at(r[CREATED_AT]));
  const sorted = times.every(
    (t, i) => i === 0 || (t !== null && times[i - 1]! !== null && times[i - 1]! >= t),
  );
  const laterNotOlder = tb >= ta;
  const laterFirst = tb > ta ? ib < ia : true;
  if (!(sorted && laterNotOlder && laterFirst)) {
    walk.orderOk = false;
    walk.orderEvidence = !sorted
      ? `the list is not sorted by ${CREATED_AT}, newest first`
      : !laterNotOlder
        ? `the customer created second shows an older ${CREATED_AT} (${String(lb[CREATED_AT])} < ${String(la[CREATED_AT])})`
        : 'the customer created second is listed after the first though newer';
    return false;
  }
  walk.orderEvidence = `customers ${String(a.id)} (${String(la[CREATED_AT])}) and ${String(b.id)} (${String(lb[CREATED_AT])}) listed newest first`;
  if (ta === tb) walk.tie = ia < ib ? { first: la, second: lb } : { first: lb, second: la };
  return true;
}

/** The precision and tie-break rows: what was seen, which the read-back works with either way. */
function addObservedRows(ctx: ProbeContext, walk: Walk): void {
  const precise = walk.created.some((c) => subSecond(c[CREATED_AT]));
  ctx.add({
    step: 'created_at precision',
    assumption: 'created_at is ISO 8601 (precision not shown; the read-back works at any)',
    result: 'holds',
    observed: precise ? 'sub-second' : 'seconds',
    evidence: `created_at of the customers created: ${walk.created.map((c) => String(c[CREATED_AT])).join(', ')}`,
    request_ids: [],
  });
  const { tie } = walk;
  const numeric = (r: Rec) => BigInt(/^\d+$/.test(String(r.id)) ? String(r.id) : '0');
  const direction = tie ? (numeric(tie.first) < numeric(tie.second) ? 'ascending' : 'descending') : null;
  ctx.add({
    step: 'customer tie-break',
    assumption:
      'customers sharing a created_at are ordered by id (direction not shown; the read-back works with either)',
    result: direction ? 'holds' : 'could_not_tell',
    ...(direction && { observed: direction }),
    evidence: tie
      ? `customers ${String(tie.first.id)} and ${String(tie.second.id)} share created_at ${String(tie.first[CREATED_AT])}: listed ${String(tie.first.id)} first, ties by ${direction} id`
      : `no two customers created back to back shared a created_at (${precise ? 'sub-second precision' : 'each pair crossed a second'})`,
    request_ids: [],
  });
}

/**
 * CUSTOMERS_NEWEST_FIRST, with `--write`: creates pairs of customers one right after the other
 * (up to three pairs, until two share a `created_at`) and reads the newest-first list back: the
 * order the registration read-back walks (decision 018), the direction ties are broken in, the
 * precision of `created_at`.
 */
export const check: GuardCheck = async (ctx, assumption) => {
  const w = ctx.options.write;
  if (!w || w.customers === false) {
    addGuardRow(ctx, assumption, {
      step: 'customer order',
      result: 'could_not_tell',
      evidence: 'needs --write (creates two customers on the sandbox environment)',
      request_ids: [],
    });
    return;
  }
  const walk: Walk = { ids: [], created: [], tie: null, orderOk: true, orderEvidence: '', failed: null };
  const stamp = Date.now().toString(36);
  for (let pair = 1; pair <= 3 && !walk.tie && !walk.failed; pair++) {
    ctx.progress(`writing: two customers, one right after the other (pair ${pair})`);
    const made = await createPair(ctx, walk, stamp, pair);
    if (walk.failed) break;
    walk.created.push(...made);
    const items = await listBoth(ctx, walk, made);
    if (!items || !judgePair(walk, items, made[0]!, made[1]!)) break;
  }
  if (walk.failed) {
    for (const step of ['customer order', 'customer tie-break', 'created_at precision']) {
      const row = { step, result: 'could_not_tell', evidence: walk.failed, request_ids: walk.ids } as const;
      if (step === 'customer order') addGuardRow(ctx, assumption, row);
      else ctx.add({ ...row, assumption: 'see customer order' });
    }
    return;
  }
  addGuardRow(ctx, assumption, {
    step: 'customer order',
    result: walk.orderOk ? 'holds' : 'does_not_hold',
    evidence: walk.orderEvidence,
    request_ids: walk.ids,
  });
  addObservedRows(ctx, walk);
};
