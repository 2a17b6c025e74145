import type { GuardPartner, ListEnvelope } from './partner-port.js';
import type { ReadContext, SnapshotPageCache } from './read-back.js';
import type { SnapshotStore } from './snapshot-store.js';

type PartnerRecord = Record<string, unknown>;

/** Where a snapshot may come from besides a fresh read (issue 43): both optional. */
export interface SnapshotSources {
  /** Pages shared in this process while young. */
  cache?: SnapshotPageCache;
  /** The latest read of each record, shared by every process (and its page). */
  store?: SnapshotStore;
}

export interface FoundSnapshot {
  record: PartnerRecord | null;
  /** When the read the snapshot rests on was asked for (this process's clock, ms). */
  askedAt: number;
  /** Partner requests this snapshot cost (0 when it came from a stored or shared read). */
  requests: number;
}

const PER_PAGE = 1000;
const MAX_PAGES = 1000;
/** Pages tried around the remembered one before paging from page 1. */
const MAX_STEPS = 3;

/**
 * Which way the record lies from a page of a list in descending numeric id (spec 4.6.2, the
 * enrollments' and applications' default order): -1 an earlier page, +1 a later one, 0 can't say
 * (ids not numeric, or the record's id falls inside the page but it is not there).
 */
function direction(items: readonly PartnerRecord[], id: string): -1 | 0 | 1 {
  const target = Number(id);
  const first = Number(items[0]?.id);
  const last = Number(items[items.length - 1]?.id);
  if (!Number.isSafeInteger(target) || !Number.isSafeInteger(first) || !Number.isSafeInteger(last)) return 0;
  if (target > first) return -1;
  if (target < last) return 1;
  return 0;
}

/**
 * The record's state before a write, at the least cost the evidence rules allow: a stored read
 * that is young enough and later than our last write to it (no request); else the page that held
 * it last time (one request, the page read itself checks it is still there, and a record moved
 * by inserts or deletions is followed a page or two); else paging from page 1. Every page read is
 * stored for the next snapshot. Only for lists in descending numeric id without a filter.
 */
export async function findSnapshotRecord(
  partner: GuardPartner,
  resource: 'applications' | 'enrollments',
  id: string,
  ctx: ReadContext,
  sources: SnapshotSources,
): Promise<FoundSnapshot> {
  const { cache, store } = sources;
  const stored = store ? await store.find(resource, id).catch(() => null) : null;
  if (stored?.usable && stored.record && stored.askedAt != null)
    return { record: stored.record, askedAt: stored.askedAt, requests: 0 };
  let requests = 0;
  const fresh = async (page: number) => {
    const askedAt = Date.now();
    requests++;
    const { data } = await partner.listPage(
      resource,
      { page, per_page: PER_PAGE },
      { lane: 'readback', requestId: ctx.nextReadId() },
    );
    const envelope = data as ListEnvelope;
    // Stored for the next snapshot (any process); a failure to store costs only a later request.
    await store?.savePage(resource, envelope.items, askedAt, { page, perPage: PER_PAGE }).catch(() => {});
    return { envelope, askedAt };
  };
  const read = async (page: number, shared: boolean) => {
    let got: { envelope: ListEnvelope; askedAt: number } | undefined;
    if (shared && cache) {
      const hit = await cache.page(`${resource}?page=${page}`, () => fresh(page).then((r) => r.envelope));
      // A page asked for before our last write to the record is no snapshot of it.
      if (cache.usable(resource, id, hit.askedAt)) got = hit;
    }
    return got ?? (await fresh(page));
  };

  if (stored?.page != null && stored.perPage === PER_PAGE) {
    let page = stored.page;
    for (let step = 0; step < MAX_STEPS && page >= 1; step++) {
      const { envelope, askedAt } = await read(page, true);
      const hit = envelope.items.find((r) => String(r.id) === id);
      if (hit) return { record: hit, askedAt, requests };
      const way = direction(envelope.items, id);
      if (way === 0 || (way > 0 && !hasMore(envelope, page))) break;
      page += way;
    }
  }
  for (const shared of cache ? [true, false] : [false]) {
    // With shared pages, a record not found is looked for again with fresh ones: a page shifted
    // by a deletion between two shared pages cannot hide it.
    for (let page = 1; page <= MAX_PAGES; page++) {
      const { envelope, askedAt } = await read(page, shared);
      const hit = envelope.items.find((r) => String(r.id) === id);
      if (hit) return { record: hit, askedAt, requests };
      if (!hasMore(envelope, page) || envelope.items.length === 0) break;
    }
  }
  return { record: null, askedAt: Date.now(), requests };
}

function hasMore(envelope: ListEnvelope, page: number): boolean {
  return envelope.has_more ?? (envelope.page_count != null && page < envelope.page_count);
}
