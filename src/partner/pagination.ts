import type { Logger } from '../logger.js';
import { newRecordsFirst, type ListQuery, type PagedResource } from './endpoints.js';
import type { ListPage, PartnerRecord } from './schemas.js';
import type { PartnerResponse } from './transport.js';

/**
 * Drift-safe walk over a paginated list (spec 4.6).
 *
 * Rule 4: a record deleted while paging shifts every later page back by one, so a naive walk
 * skips the record that slid over the boundary onto a page already read. Records created while
 * paging land at the start of newest-first lists and shift later pages forward: repeats.
 *
 * The walk compares each page's `total_count` with the previous forward page's. If it dropped
 * (or changed at all, for orders where new records need not land at the start), records may
 * have slid back across the boundary, onto the page before. So it re-reads the pages before,
 * newest boundary first, yielding any record it has not seen, until it meets a page whose records
 * were all seen already: nothing slid past that one. A drop of k records shifts by at most k, so
 * this costs ceil(k / per_page) + 1 extra requests per drift, and nothing when nothing changed.
 *
 * Repeats (records yielded before, pushed forward by creations or seen again on a re-read) are
 * left out of the pages yielded: each id is yielded once per walk.
 */
export async function* walkPages(deps: {
  resource: PagedResource;
  query: ListQuery;
  perPage: number;
  fetchPage: (page: number, perPage: number) => Promise<PartnerResponse<ListPage>>;
  logger: Logger;
}): AsyncGenerator<PartnerResponse<ListPage>> {
  const seen = new Set<string>();
  const createdFirst = newRecordsFirst(deps.resource, deps.query);
  const log = deps.logger.child({ resource: deps.resource });
  const fresh = (res: PartnerResponse<ListPage>): PartnerResponse<ListPage> => {
    const items = res.data.items.filter((r) => {
      const key = String(r.id);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    return { ...res, data: { ...res.data, items } };
  };

  let previousTotal: number | undefined;
  for (let page = deps.query.page ?? 1; ; page++) {
    const res = await deps.fetchPage(page, deps.perPage);
    yield fresh(res);
    const total = res.data.total_count;
    const drifted =
      previousTotal !== undefined && (createdFirst ? total < previousTotal : total !== previousTotal);
    if (drifted && page > 1) {
      log.info(
        { page, previousTotal, total, partnerRequestId: res.requestId },
        'list changed while paging, re-reading boundary',
      );
      for (let back = page - 1; back >= 1; back--) {
        const again = fresh(await deps.fetchPage(back, deps.perPage));
        if (again.data.items.length === 0) break;
        yield again;
      }
    }
    previousTotal = total;
    if (!res.data.has_more) return;
  }
}

/** The records of a walk, each id once. */
export async function* dedupeRecords(
  pages: AsyncIterable<PartnerResponse<ListPage>>,
): AsyncGenerator<PartnerRecord> {
  const seen = new Set<string>();
  for await (const page of pages) {
    for (const record of page.data.items) {
      const key = String(record.id);
      if (seen.has(key)) continue;
      seen.add(key);
      yield record;
    }
  }
}
