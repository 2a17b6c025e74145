import { CUSTOMERS_NEWEST_FIRST } from '../../partner/assumptions.js';
import type { GuardPartner, ListEnvelope } from './partner-port.js';
import type { ReadContext } from './read-back.js';

/**
 * Reading what was created since a snapshot, for the writes that create a record (customers,
 * enrollments). Such a record has no id before the write, so the read-back cannot look it up;
 * it relies on spec 4.6 instead (docs/decisions/018-onboarding-read-back-by-position.md):
 *
 * - the customer list is newest first by `created_at` (4.2, 4.6.3), the enrollment list newest
 *   first by `id` (4.6.2), and records created while paging appear at the start (4.6.4);
 * - so the snapshot remembers the newest record of page 1 (the marker) and, for customers, the ids
 *   of page 1's records that share its `created_at`;
 * - a later walk from page 1 stops only at a record strictly older than the marker (`created_at`
 *   for customers, a smaller id for enrollments). Records sharing the marker's `created_at` sort
 *   before or after it as the API breaks ties (the spec shows neither the direction nor the
 *   precision), so every one of them the snapshot did not hold is a candidate: whichever the tie
 *   order and the precision, a record our write created is before that stop;
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
  /**
   * The ids of the snapshot page's records sharing the marker's `created_at` (the marker's
   * included): they existed before the write, so none of them is ours. Absent on markers stored
   * before this was kept: then nothing tied is known, and a tied record is only "maybe ours".
   */
  tied_ids?: string[];
  /** The snapshot page held every record sharing the marker's `created_at` (a record older came after them, or the list ended). */
  tied_complete?: boolean;
}

/**
 * The list's newest-first query: customers ordered explicitly, as the assumption the probe checks
 * says (CUSTOMERS_NEWEST_FIRST); the others by their default.
 */
export function newestFirstQuery(resource: CreatedResource): Record<string, string> {
  const { collection, orderBy, orderDirection } = CUSTOMERS_NEWEST_FIRST;
  return resource === collection ? { order_by: orderBy, order_direction: orderDirection } : {};
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

function instant(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : t;
}

function hasMore(envelope: ListEnvelope, page: number): boolean {
  return Boolean(envelope.has_more ?? (envelope.page_count != null && page < envelope.page_count));
}

export function markerOf(envelope: ListEnvelope): Marker | null {
  const first = envelope.items[0];
  if (!first || first.id == null) return null;
  const at = instant(first.created_at);
  if (at === null) return { id: String(first.id), created_at: null };
  const tied = envelope.items.filter((r) => instant(r.created_at) === at);
  const olderFollows = envelope.items.some((r) => {
    const t = instant(r.created_at);
    return t !== null && t < at;
  });
  return {
    id: String(first.id),
    created_at: first.created_at as string,
    tied_ids: tied.map((r) => String(r.id)),
    tied_complete: olderFollows || !hasMore(envelope, 1),
  };
}

/** Where a record sorts against the marker, by the field the list is ordered on. */
export type Place = 'newer' | 'tied' | 'older' | 'unplaced';

/** How a newest-first list orders its records, as the walk needs it. */
export interface NewestFirstOrder {
  place(record: PartnerRecord, marker: Marker): Place;
  /**
   * Why a walk from this marker cannot prove absence (null: it can). A marker without the field
   * the order reads leaves only its own position to go by, and records tied with it may sort after it.
   */
  unbounded(marker: Marker): string | null;
  /** Nothing sharing the marker's place can follow it (a unique key): the walk stops at the marker. */
  stopsAtMarker: boolean;
}

/** Customers: newest first by `created_at`, ties broken by id in a direction the spec does not show. */
export const byCreatedAt: NewestFirstOrder = {
  place(record, marker) {
    const a = instant(record.created_at);
    const b = instant(marker.created_at);
    if (a === null || b === null) return 'unplaced';
    return a > b ? 'newer' : a < b ? 'older' : 'tied';
  },
  unbounded: (marker) =>
    instant(marker.created_at) === null
      ? `the newest record at the snapshot (${marker.id}) shows no created_at`
      : null,
  stopsAtMarker: false,
};

/** Enrollments: newest first by id (spec 4.6.2); ids are unique, so nothing ties. */
export const byId: NewestFirstOrder = {
  place(record, marker) {
    const id = String(record.id ?? '');
    if (!/^\d+$/.test(id) || !/^\d+$/.test(marker.id)) return 'unplaced';
    const a = BigInt(id);
    const b = BigInt(marker.id);
    return a > b ? 'newer' : a < b ? 'older' : 'tied';
  },
  unbounded: () => null,
  stopsAtMarker: true,
};

export interface CreatedSince {
  /** Records created since the snapshot, newest first. */
  records: PartnerRecord[];
  /**
   * Records the walk met but could not place as created since the snapshot (tied with the marker
   * when the snapshot page did not hold all its ties, a record without the order's field, one
   * out of order): a match among them proves nothing either way.
   */
  uncertain: PartnerRecord[];
  /**
   * The walk covered every place a record created since the snapshot can be: it reached a record
   * strictly older than the marker (or the list's end) without drift, from a marker it could
   * bound by. Only then may the absence of a record prove "not applied".
   */
  complete: boolean;
  /** Why the walk is incomplete (for the unverified reason). */
  why?: string;
}

/**
 * Every record created since the marker was read (`marker` null: the list was empty then, so
 * the whole list). Incomplete when the list kept drifting, had no end within 1,000 pages, or the
 * order could not place what it met.
 */
export async function createdSince(
  partner: GuardPartner,
  resource: CreatedResource,
  marker: Marker | null,
  order: NewestFirstOrder,
  ctx: ReadContext,
): Promise<CreatedSince> {
  const unbounded = marker ? order.unbounded(marker) : null;
  const held = new Set(marker?.tied_ids ?? (marker ? [marker.id] : []));
  for (let walk = 0; walk < MAX_WALKS; walk++) {
    const records: PartnerRecord[] = [];
    const uncertain: PartnerRecord[] = [];
    // Records the order cannot place, met before the marker: its position proves them newer
    // (the order is total and on fields that never change), once the marker shows up.
    const beforeMarker: PartnerRecord[] = [];
    let seenMarker = false;
    let why: string | undefined;
    const done = (ended: boolean, reason?: string): CreatedSince => {
      uncertain.push(...beforeMarker);
      const missing = reason ?? unbounded ?? why;
      return {
        records,
        uncertain,
        complete: ended && missing === undefined,
        ...(missing !== undefined && { why: missing }),
      };
    };
    let total: number | undefined;
    let drifted = false;
    for (let page = 1; page <= MAX_PAGES; page++) {
      const envelope = await readPage(partner, resource, page, ctx);
      if (page > 1) {
        // Without total_count nothing shows whether a deletion shifted this page: incomplete.
        if (total === undefined || envelope.total_count === undefined)
          return done(false, 'the list shows no total_count across pages');
        if (envelope.total_count !== total) {
          drifted = true;
          break;
        }
      }
      total = envelope.total_count;
      for (const record of envelope.items) {
        if (!marker) {
          records.push(record);
          continue;
        }
        if (String(record.id) === marker.id) {
          seenMarker = true;
          records.push(...beforeMarker.splice(0));
          if (order.stopsAtMarker || unbounded !== null) return done(true);
          continue;
        }
        switch (order.place(record, marker)) {
          case 'older':
            return done(true);
          case 'newer':
            // After the marker, a newer record means the list is not in the order assumed.
            if (seenMarker) {
              uncertain.push(record);
              why = `record ${String(record.id)} sorts after the marker though newer`;
            } else records.push(record);
            break;
          case 'tied':
            if (held.has(String(record.id))) break;
            (marker.tied_complete === true ? records : uncertain).push(record);
            break;
          case 'unplaced':
            if (seenMarker) uncertain.push(record);
            else beforeMarker.push(record);
            why ??= `record ${String(record.id)} shows no created_at to place it by`;
            break;
        }
      }
      if (!hasMore(envelope, page) || envelope.items.length === 0) return done(true);
    }
    if (!drifted) return done(false, 'the list has no end within 1,000 pages');
  }
  return { records: [], uncertain: [], complete: false, why: 'the list kept changing while it was read' };
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
    if (!hasMore(envelope, page) || envelope.items.length === 0) return null;
  }
  return null;
}
