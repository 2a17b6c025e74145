import type { GuardPartner, ListEnvelope } from './partner-port.js';
import type { ReadContext } from './read-back.js';

/**
 * Reading what was created since a snapshot, for the writes that create a record (customers,
 * enrollments). Such a record has no id before the write, so the read-back cannot look it up;
 * it relies on spec 4.6 instead:
 *
 * - the customer list is newest first by `created_at` (4.2, 4.6.3), the enrollment list newest
 *   first by `id` (4.6.2), and records created while paging appear at the start (4.6.4);
 * - so the snapshot remembers the newest record of page 1 (the marker), and a later walk from
 *   page 1 reaches every record created since before it reaches the marker (or a record older
 *   than it): that prefix is where a record our write created must be;
 * - records deleted while paging shift later pages by one (4.6.4) and could hide a record at a
 *   page boundary, so a walk that sees `total_count` change between its pages starts again, and
 *   after a few tries reports itself incomplete (the caller then answers `unknown`).
 */

type PartnerRecord = Record<string, unknown>;

export type CreatedResource = 'customers' | 'enrollments';

/** The newest record of the list when the snapshot was read. */
export interface Marker {
  id: string;
  created_at: string | null;
}

/** The list's newest-first query: customers ordered explicitly, the others by their default. */
export function newestFirstQuery(resource: CreatedResource): Record<string, string> {
  return resource === 'customers' ? { order_by: 'created_at', order_direction: 'desc' } : {};
}

const MAX_PAGES = 1000;
const MAX_WALKS = 3;

async function readPage(
  partner: GuardPartner,
  resource: CreatedResource,
  page: number,
  ctx: ReadContext,
): Promise<ListEnvelope> {
  const result = await partner.listPage(
    resource,
    { ...newestFirstQuery(resource), page, per_page: 1000 },
    { lane: 'readback', requestId: ctx.nextReadId() },
  );
  return result.data as ListEnvelope;
}

/**
 * Page 1 of the newest-first list, read fresh: never a page shared through the snapshot cache.
 * A shared page would be older than this command's snapshot, so its marker too, and a record
 * created in between (another system's customer with this e-mail, another enrollment of this
 * customer) would then sit in the prefix the read-back takes for "created since our snapshot".
 */
export async function firstPage(
  partner: GuardPartner,
  resource: CreatedResource,
  ctx: ReadContext,
): Promise<ListEnvelope> {
  return readPage(partner, resource, 1, ctx);
}

export function markerOf(envelope: ListEnvelope): Marker | null {
  const first = envelope.items[0];
  if (!first || first.id == null) return null;
  return { id: String(first.id), created_at: typeof first.created_at === 'string' ? first.created_at : null };
}

/** Whether `record` sorts after the marker for a reason other than being the marker itself. */
export type OlderThan = (record: PartnerRecord, marker: Marker) => boolean;

/** Customers: strictly older `created_at` than the marker's (records created since sort first). */
export const createdBefore: OlderThan = (record, marker) => {
  if (marker.created_at == null || typeof record.created_at !== 'string') return false;
  const a = Date.parse(record.created_at);
  const b = Date.parse(marker.created_at);
  return !Number.isNaN(a) && !Number.isNaN(b) && a < b;
};

/** Enrollments: a smaller numeric id than the marker's (newest first by id, spec 4.6.2). */
export const smallerId: OlderThan = (record, marker) => {
  const id = String(record.id ?? '');
  if (!/^\d+$/.test(id) || !/^\d+$/.test(marker.id)) return false;
  return BigInt(id) < BigInt(marker.id);
};

export interface CreatedSince {
  /** Records before the marker, newest first. */
  records: PartnerRecord[];
  /** The walk reached the marker, an older record or the list's end without drift. */
  complete: boolean;
}

/**
 * Every record created since the marker was read (`marker` null: the list was empty then, so
 * the whole list). Incomplete when the list kept drifting or had no end within 1,000 pages.
 */
export async function createdSince(
  partner: GuardPartner,
  resource: CreatedResource,
  marker: Marker | null,
  olderThan: OlderThan,
  ctx: ReadContext,
): Promise<CreatedSince> {
  for (let walk = 0; walk < MAX_WALKS; walk++) {
    const records: PartnerRecord[] = [];
    let total: number | undefined;
    let drifted = false;
    for (let page = 1; page <= MAX_PAGES; page++) {
      const envelope = await readPage(partner, resource, page, ctx);
      if (page > 1) {
        // Without total_count nothing shows whether a deletion shifted this page: incomplete.
        if (total === undefined || envelope.total_count === undefined) return { records, complete: false };
        if (envelope.total_count !== total) {
          drifted = true;
          break;
        }
      }
      total = envelope.total_count;
      for (const record of envelope.items) {
        if (marker && (String(record.id) === marker.id || olderThan(record, marker)))
          return { records, complete: true };
        records.push(record);
      }
      const more = envelope.has_more ?? (envelope.page_count != null && page < envelope.page_count);
      if (!more || envelope.items.length === 0) return { records, complete: true };
    }
    if (!drifted) return { records, complete: false };
  }
  return { records: [], complete: false };
}

/**
 * The first record matching `predicate`, newest first, over the whole list (for the outcome:
 * the id of a customer or enrollment, found after the guard has decided).
 */
export async function findNewest(
  partner: GuardPartner,
  resource: CreatedResource,
  predicate: (record: PartnerRecord) => boolean,
  ctx: ReadContext,
  maxPages = MAX_PAGES,
): Promise<PartnerRecord | null> {
  for (let page = 1; page <= maxPages; page++) {
    const envelope = await readPage(partner, resource, page, ctx);
    const hit = envelope.items.find(predicate);
    if (hit) return hit;
    const more = envelope.has_more ?? (envelope.page_count != null && page < envelope.page_count);
    if (!more || envelope.items.length === 0) return null;
  }
  return null;
}
