import { inScope, scopeKey } from './api-keys.js';
import { inRange, pageOf, parseDateRange, parsePaging, type DateRange } from './list-query.js';
import { ASC_ID, ascendingBy, customerOrder, DESC_ID, type Order } from './list-orders.js';
import type { SandboxRecord } from './record-store.js';
import type { SandboxConfig } from './sandbox-config.js';
import { visibleRecord, type Route, type RouteContext } from './route.js';
import type { Resource } from '../../partner/resources.js';

interface ListSpec {
  path: string;
  resource: Resource;
  /** Fixed order, or computed from the query (customers). Default: descending id. */
  order?: Order | ((query: Record<string, unknown>, config: SandboxConfig) => Order);
  /** Names of the from/to date parameters (spec 4.7.2), filtering on `updated_at`. */
  dates?: [string, string];
  /** Applications only: the deprecated inverse of `has_more` (spec 2.3, 9.3). */
  lastPage?: boolean;
}

/** The records of a collection the key may see, in order, within the dates: cached per query shape. */
function ordered(ctx: RouteContext, resource: Resource, order: Order, range: DateRange): SandboxRecord[] {
  const collection = ctx.state.store.collection(resource);
  const key = ctx.key;
  const scope = key ? scopeKey(key) : '*';
  const sorted = () => collection.view(order.key, (records) => records.sort(order.compare));
  if (scope === '*' && range.from === undefined && range.to === undefined) return sorted();
  return collection.view(`${order.key}|${range.from}|${range.to}|${scope}`, () => {
    const visible = scope === '*' || !key ? sorted() : sorted().filter((record) => inScope(key, record));
    return inRange(visible, range);
  });
}

function listRoute(spec: ListSpec): Route {
  return {
    method: 'GET',
    path: spec.path,
    auth: true,
    write: false,
    ledger: false,
    bucket: 'default',
    handle(ctx) {
      const paging = parsePaging(ctx.query);
      const range: DateRange = spec.dates
        ? parseDateRange(ctx.query, spec.dates[0], spec.dates[1])
        : { from: undefined, to: undefined };
      const order =
        typeof spec.order === 'function' ? spec.order(ctx.query, ctx.state.config) : (spec.order ?? DESC_ID);
      let records = ordered(ctx, spec.resource, order, range);
      // A knob for a lagging read replica: records just created are not listed yet.
      if (ctx.state.listedAt.size > 0) records = records.filter((r) => ctx.state.listed(spec.resource, r));
      let page = pageOf(records, paging);
      // A knob to break the guard's assumption that payments show on the enrollment record.
      if (spec.resource === 'enrollments' && !ctx.state.config.enrollment_payments_visible) {
        page = {
          ...page,
          items: page.items.map((record) => {
            const copy = { ...record };
            delete copy.rental_payments;
            return copy;
          }),
        };
      }
      return { status: 200, body: spec.lastPage ? { ...page, last_page: !page.has_more } : page };
    },
  };
}

const UPDATED_AT_DATES: [string, string] = ['updated_at_from_date', 'updated_at_to_date'];
// Billing statements and activities filter on `updated_at` like everything else, so the
// poller's incremental sync (spec 4.7.3) sees a changed statement again.
const BILLING_DATES: [string, string] = ['start_date', 'end_date'];

/** Every paginated collection of spec 4.2 to 4.4, plus bank accounts and customer issues. */
export function listRoutes(): Route[] {
  return [
    listRoute({
      path: '/partner/v1/customers',
      resource: 'customers',
      order: (query, config) => customerOrder(query, config.tie_break),
    }),
    listRoute({ path: '/partner/v1/enrollments', resource: 'enrollments' }),
    listRoute({
      path: '/partner/v1/applications',
      resource: 'applications',
      dates: ['last_updated_from_date', 'last_updated_to_date'],
      lastPage: true,
    }),
    listRoute({
      path: '/partner/v1/applications/activity_logs',
      resource: 'application_activity_logs',
      dates: ['from_date', 'to_date'],
    }),
    listRoute({ path: '/partner/v1/properties', resource: 'properties', dates: UPDATED_AT_DATES }),
    listRoute({
      path: '/partner/v1/units',
      resource: 'units',
      dates: UPDATED_AT_DATES,
      order: ascendingBy('title'),
    }),
    listRoute({ path: '/partner/v1/leads', resource: 'leads', dates: UPDATED_AT_DATES }),
    listRoute({ path: '/partner/v1/listings', resource: 'listings', order: ASC_ID }),
    listRoute({ path: '/partner/v1/roles', resource: 'roles', order: ascendingBy('name') }),
    // Assumed paths (DESIGN.md: users and magic links are not shown in the spec).
    listRoute({ path: '/partner/v1/users', resource: 'users' }),
    listRoute({ path: '/partner/v1/magic_links', resource: 'magic_links' }),
    listRoute({
      path: '/partner/v1/billing/statements',
      resource: 'billing_statements',
      dates: BILLING_DATES,
    }),
    listRoute({
      path: '/partner/v1/billing/activities',
      resource: 'billing_activities',
      dates: BILLING_DATES,
    }),
    {
      // Spec 4.4: not paginated, the array itself without the envelope.
      method: 'GET',
      path: '/partner/v1/bank_accounts',
      auth: true,
      write: false,
      ledger: false,
      bucket: 'default',
      handle: (ctx) => ({
        status: 200,
        body: ordered(ctx, 'bank_accounts', DESC_ID, { from: undefined, to: undefined }),
      }),
    },
    {
      // Spec 4.2: not paginated, `{ issues: [...] }`, the `customer_issues` of that customer.
      method: 'GET',
      path: '/partner/v1/customers/{id}/issues',
      auth: true,
      write: false,
      ledger: false,
      bucket: 'default',
      handle(ctx) {
        const customer = visibleRecord(ctx, 'customers');
        // A visible customer's issues are all visible: issues need not carry owner or group.
        const issues = [...ctx.state.store.collection('customer_issues').values()]
          .filter((issue) => String(issue.customer_id) === String(customer.id))
          .sort(DESC_ID.compare);
        return { status: 200, body: { issues } };
      },
    },
  ];
}
