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
 * The walk compares each page's `total_count` with the previous read's. If it dropped (or changed
 * at all, for orders where new records need not land at the start), records may have slid back
 * across the boundary, onto the page before. So it re-reads the pages before, newest boundary
 * first, yielding any record it has not seen, until it meets a page whose records were all seen
 * already: nothing slid past that one. A drop of k records shifts by at most k, so this costs
 * ceil(k / per_page) + 1 extra requests per drift, and nothing when nothing changed.
 *
 * Where new records may land after the cursor (ascending lists: listings, units, roles), a delete
 * behind the cursor and a create ahead of it in the same gap leave `total_count` unchanged while
 * a record slid back. The created record is then still ahead of the cursor, so the walk reads it
 * later: a record whose `created_at` is later than the walk's start (by the API's own `Date`
 * header, ASSUMPTION `RECORDS_CARRY_CREATED_AT`) makes the walk read forward again from the page
 * before the first one read since that creation. Records without `created_at` fall back to
 * `updated_at` (read again from the first page), and records with neither to a re-read of the
 * page before after every page. A change of `total_count` on such a list (a record may have been
 * created ahead and deleted again unseen) makes the walk read forward again from the first page,
 * re-checking the page before after every page from then on. On such a list a record already
 * yielded that turns up on a page read for the first time was pushed forward by one created behind
 * the cursor (keyed lists take new records anywhere): the walk then checks the page before, as
 * after a change of `total_count`, since a delete behind the cursor may hide in the same gap. So a
 * walk during which nothing was created or deleted costs one request per page, whatever the order.
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
  const lastIdOf = new Map<number, string>();
  let previousTotal: number | undefined;
  let drifted = false;
  // Where creations may land ahead of the cursor: when the walk started (the API's clock), each
  // read's time, the records already recognised as created during the walk, and the earliest
  // creation not yet answered by reading forward again (-Infinity: from the first page).
  const createdAhead = !createdFirst;
  let startedAt: number | undefined;
  const reads: { page: number; at: number }[] = [];
  const handledNew = new Set<string>();
  let suspectSince: number | undefined;
  let ageUnknown = false;

  // Reads a page: notes whether the list changed since the read before (of any page) and whether
  // the page's last record moved since this page was last read; keeps only records not yet seen.
  const read = async (page: number) => {
    const res = await deps.fetchPage(page, deps.perPage);
    if (createdAhead) noteCreations(page, res);
    const total = res.data.total_count;
    if (previousTotal !== undefined && (createdFirst ? total < previousTotal : total !== previousTotal)) {
      log.info({ page, previousTotal, total, partnerRequestId: res.requestId }, 'list changed while paging');
      drifted = true;
      if (createdAhead && !ageUnknown) {
        // A record created ahead of the cursor and deleted before we read it leaves no trace but
        // this change, and may have hidden a delete behind the cursor at any boundary crossed so
        // far: read forward again from the first page, re-checking every boundary from now on.
        ageUnknown = true;
        suspectSince = -Infinity;
      }
    }
    previousTotal = total;
    const last = res.data.items.at(-1);
    const lastId = last === undefined ? undefined : String(last.id);
    const boundaryMoved = lastIdOf.has(page) && lastIdOf.get(page) !== lastId;
    if (lastId === undefined) lastIdOf.delete(page);
    else lastIdOf.set(page, lastId);
    const items = res.data.items.filter((r) => {
      const key = String(r.id);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    return { res: { ...res, data: { ...res.data, items } }, count: res.data.items.length, boundaryMoved };
  };

  // The API's clock at this answer (the Date header has whole seconds: take the earliest it means).
  const answeredAt = (res: PartnerResponse<ListPage>) => {
    const date = Date.parse(res.headers.get('date') ?? '');
    return Number.isNaN(date) ? Date.now() - CLOCK_UNKNOWN_MARGIN_MS : date;
  };
  const noteCreations = (page: number, res: PartnerResponse<ListPage>) => {
    const at = answeredAt(res);
    reads.push({ page, at });
    startedAt ??= at - CREATED_MARGIN_MS;
    for (const record of res.data.items) {
      const key = String(record.id);
      if (handledNew.has(key)) continue;
      const created = timestamp(record.created_at);
      const updated = timestamp(record.updated_at);
      if (created === undefined && updated === undefined) {
        ageUnknown = true;
        continue;
      }
      if ((created ?? updated)! < startedAt) continue;
      handledNew.add(key);
      const since = created === undefined ? -Infinity : created - CREATED_MARGIN_MS;
      suspectSince = Math.min(suspectSince ?? Infinity, since);
      log.info({ page, id: key, partnerRequestId: res.requestId }, 'record created while paging');
    }
  };

  const first = deps.query.page ?? 1;
  let furthest = first - 1;
  for (let page = first; ; page++) {
    const { res, count } = await read(page);
    // Where creations may land anywhere (keyed lists), a record already seen on a page never read
    // before was pushed forward by one created behind the cursor, and a delete behind it in the
    // same gap may have left the total unchanged: check the page before, as for a change of total.
    if (createdAhead && page > furthest && count > res.data.items.length) drifted = true;
    furthest = Math.max(furthest, page);
    if (res.data.items.length > 0 || page === first) yield res;
    // Where new records may land after the cursor, a deletion and a creation can leave the total
    // unchanged: only the page before shows whether a record slid back onto it.
    if (page > first && (drifted || ageUnknown)) {
      // A change seen at this read may have pushed records back and forth across the boundary.
      const changedAtFrontier = drifted;
      drifted = false;
      // Walk back to a page that proves nothing slid past it: records all seen before, its last
      // one unmoved, read with the list unchanged. An empty page proves nothing (the list may have
      // shrunk below it).
      let slid = false;
      let settledAt = first - 1;
      for (let back = page - 1; back >= first; back--) {
        const again = await read(back);
        if (again.res.data.items.length > 0) {
          slid = true;
          yield again.res;
        }
        if (again.res.data.items.length === 0 && again.count > 0 && !drifted && !again.boundaryMoved) {
          settledAt = back;
          break;
        }
        if (again.boundaryMoved) slid = true;
      }
      if (slid || drifted || changedAtFrontier) {
        // Records moved while we looked: walk forward again from the proven page, so those that
        // creations pushed forward again are read too (only unseen ones are yielded).
        drifted = false;
        page = settledAt; // the loop's increment reads settledAt + 1 next
        continue;
      }
    }
    drifted = false;
    if (suspectSince !== undefined) {
      // A record created while paging was read ahead of the cursor: a delete behind the cursor in
      // the same gap may have hidden behind it. Read forward again from the page before the first
      // one read since that creation (only unseen records are yielded).
      const since = suspectSince;
      suspectSince = undefined;
      const readSince = reads.filter((r) => r.at >= since).map((r) => r.page);
      const from = readSince.length > 0 ? Math.min(...readSince) : page;
      page = Math.max(first, from - 1) - 1; // the loop's increment reads from - 1 next
      continue;
    }
    if (!res.data.has_more) return;
  }
}

/** Margin around the walk's start and a record's creation: the API's clock in whole seconds. */
const CREATED_MARGIN_MS = 2000;
/** No `Date` header: the walk's start is taken this much before our own clock. */
const CLOCK_UNKNOWN_MARGIN_MS = 5 * 60_000;

function timestamp(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
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
