import { DATE_FILTERS } from '../../partner/assumptions.js';
import { LIST_PATHS } from '../../partner/endpoints.js';
import { day, itemsOf } from '../probe-types.js';
import { addGuardRow, type GuardCheck } from './check.js';

const APPLICATIONS = DATE_FILTERS.collection;
const FILTER = DATE_FILTERS.filter;

/**
 * DATE_FILTERS, read-only: an application updated on day D is listed with the filter from D and
 * not from D + 1, and nothing updated before D is listed from D (inclusive whole UTC days).
 */
export const check: GuardCheck = async (ctx, assumption) => {
  const firstPage = await ctx.applicationsPage();
  const sample = itemsOf(firstPage.body).find((r) => typeof r.updated_at === 'string');
  const step = 'date_filters';
  if (!sample) {
    addGuardRow(ctx, assumption, {
      step,
      result: 'could_not_tell',
      evidence: 'no application with updated_at to try the filter on',
      request_ids: [firstPage.requestId],
    });
    return;
  }
  const d = new Date(String(sample.updated_at));
  const next = new Date(d.getTime() + 86_400_000);
  const list = (from: Date) =>
    ctx.http.call('GET', LIST_PATHS[APPLICATIONS], { query: { per_page: 1000, [FILTER]: day(from) } });
  const from = await list(d);
  const after = await list(next);
  const fromItems = itemsOf(from.body);
  const included = fromItems.some((r) => String(r.id) === String(sample.id));
  const excluded = !itemsOf(after.body).some((r) => String(r.id) === String(sample.id));
  const allInRange = fromItems.every(
    (r) => typeof r.updated_at !== 'string' || day(new Date(r.updated_at)) >= day(d),
  );
  addGuardRow(ctx, assumption, {
    step,
    result:
      from.status !== 200 || after.status !== 200
        ? 'could_not_tell'
        : included && excluded && allInRange
          ? 'holds'
          : 'does_not_hold',
    evidence: `application ${String(sample.id)} updated ${String(sample.updated_at)}: from ${day(d)} ${included ? 'includes' : 'misses'} it; from ${day(next)} ${excluded ? 'leaves it out' : 'still lists it'}${allInRange ? '' : '; records before the day listed'}`,
    request_ids: [from.requestId, after.requestId],
  });
};
