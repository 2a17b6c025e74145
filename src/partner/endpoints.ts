import { MAGIC_LINKS_PATH, USERS_PATH } from './assumptions.js';
import type { Resource } from './resources.js';

/** Every paginated collection (spec 4.2-4.4): all resources but bank accounts and customer issues. */
export type PagedResource = Exclude<Resource, 'bank_accounts' | 'customer_issues'>;

/** Resource → path, in one table (spec 4.2-4.4; users and magic links are assumptions). */
export const LIST_PATHS: Record<PagedResource, string> = {
  customers: '/partner/v1/customers',
  enrollments: '/partner/v1/enrollments',
  applications: '/partner/v1/applications',
  application_activity_logs: '/partner/v1/applications/activity_logs',
  properties: '/partner/v1/properties',
  units: '/partner/v1/units',
  leads: '/partner/v1/leads',
  listings: '/partner/v1/listings',
  users: USERS_PATH,
  roles: '/partner/v1/roles',
  magic_links: MAGIC_LINKS_PATH,
  billing_statements: '/partner/v1/billing/statements',
  billing_activities: '/partner/v1/billing/activities',
};

export const PAGED_RESOURCES = Object.keys(LIST_PATHS) as PagedResource[];

export const BANK_ACCOUNTS_PATH = '/partner/v1/bank_accounts';
export const CUSTOMER_ISSUES_PATH = '/partner/v1/customers/{id}/issues';

/** A whole UTC day (spec 4.7): `YYYY-MM-DD`, or a Date read as its UTC day. */
export type DayFilter = string | Date;

export interface Paging {
  /** 1-based (spec 4.5). Default 1. */
  page?: number;
  /** 1 to 1000 (spec 4.5). The client's default is 1000. */
  per_page?: number;
}

/** The query each list accepts (spec 4.2-4.4, 4.7): paging plus its own filters. */
export interface ListQueries {
  customers: Paging & { order_by?: string; order_direction?: 'asc' | 'desc' };
  enrollments: Paging;
  applications: Paging & { last_updated_from_date?: DayFilter; last_updated_to_date?: DayFilter };
  application_activity_logs: Paging & { from_date?: DayFilter; to_date?: DayFilter };
  properties: Paging & { updated_at_from_date?: DayFilter; updated_at_to_date?: DayFilter };
  units: Paging & { updated_at_from_date?: DayFilter; updated_at_to_date?: DayFilter };
  leads: Paging & { updated_at_from_date?: DayFilter; updated_at_to_date?: DayFilter };
  listings: Paging;
  users: Paging;
  roles: Paging;
  magic_links: Paging;
  billing_statements: Paging & { start_date?: DayFilter; end_date?: DayFilter };
  billing_activities: Paging & { start_date?: DayFilter; end_date?: DayFilter };
}

export type ListQuery<R extends PagedResource = PagedResource> = ListQueries[R];

/**
 * Whether records created while paging can land after the pages already read (spec 4.6): only
 * the newest-first orders put them at the start. Where they can land anywhere, a walk must check
 * its page boundaries whenever the total changed at all, not only when it dropped.
 */
export function newRecordsFirst(resource: PagedResource, query: ListQuery = {}): boolean {
  if (resource === 'listings' || resource === 'units' || resource === 'roles') return false;
  if (resource === 'customers') {
    const q = query as ListQueries['customers'];
    return (q.order_by ?? 'created_at') === 'created_at' && (q.order_direction ?? 'desc') === 'desc';
  }
  return true;
}

/** Query string of a list call: dates as whole UTC days, undefined values left out. */
export function toSearchParams(query: Record<string, unknown>): URLSearchParams {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    params.set(key, value instanceof Date ? value.toISOString().slice(0, 10) : String(value));
  }
  return params;
}

/**
 * Fills `{id}` in a path template, URL-encoded. An empty id or a dot segment (`.`, `..`) is
 * refused: encoding leaves dots as they are and URL resolution would move the call to another
 * path (`/applications/../approve` is `/approve`). Ids are checked where they enter
 * (src/contracts/ids.ts); this is the last defence, so that no write goes anywhere but its endpoint.
 */
export function fillPath(template: string, id: string | number): string {
  const text = String(id);
  if (text === '' || text === '.' || text === '..') {
    throw new InvalidPathIdError(text);
  }
  return template.replace('{id}', encodeURIComponent(text));
}

/** An id that cannot stand as a path segment: never retried, the command is invalid. */
export class InvalidPathIdError extends Error {
  readonly retriable = false;
  constructor(readonly id: string) {
    super(`id ${JSON.stringify(id)} cannot be a path segment (empty or a dot segment)`);
    this.name = 'InvalidPathIdError';
  }
}
