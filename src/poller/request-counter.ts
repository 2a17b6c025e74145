import { BANK_ACCOUNTS_PATH, LIST_PATHS } from '../partner/index.js';
import type { Resource } from '../partner/resources.js';

/**
 * Counts the HTTP requests that reach each collection's endpoint, through the `fetch` given to
 * the Partner API client. The client's drift-safe walk re-reads pages it does not hand back (a
 * re-read that found nothing new), so counting pages would undercount the requests a pass used.
 * Retries and token renewals of the calls are counted too: they all spend the budget.
 */
export interface RequestCounter {
  /** Pass this to `createPartnerClient({ fetch })`. */
  fetch: typeof fetch;
  /** Requests sent to the resource's endpoint so far. */
  count(resource: Resource): number;
}

const byPath = new Map<string, Resource>([
  ...Object.entries(LIST_PATHS).map(([resource, path]) => [path, resource as Resource] as const),
  [BANK_ACCOUNTS_PATH, 'bank_accounts'],
]);
const ISSUES = /^\/partner\/v1\/customers\/[^/]+\/issues$/;

export function createRequestCounter(inner: typeof fetch = globalThis.fetch): RequestCounter {
  const counts = new Map<Resource, number>();
  return {
    fetch(input, init) {
      const raw = input instanceof Request ? input.url : String(input);
      const path = new URL(raw).pathname;
      const resource = ISSUES.test(path) ? 'customer_issues' : byPath.get(path);
      if (resource) counts.set(resource, (counts.get(resource) ?? 0) + 1);
      return inner(input, init);
    },
    count: (resource) => counts.get(resource) ?? 0,
  };
}
