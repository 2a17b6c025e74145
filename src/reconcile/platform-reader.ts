import type { PartnerClient } from '../partner/index.js';
import { DATE_FILTERS } from '../partner/assumptions.js';

/**
 * Reads the records a pass needs from the Partner API, on the poll lane of the shared budget
 * (decision 015: writes and read-backs keep their priority). The spec has no single-record GET, so
 * records are found in the lists: each list is walked once per key (drift-safe, spec 4.6.4: a page
 * is read again only to recover from a deletion that shifted it), and the walk stops as soon as
 * every record asked for is found, so a pass reads the pages that hold its records and no more.
 */

type PartnerRecord = Record<string, unknown>;

export interface ReadCost {
  /** List requests made (each page read, re-reads after a shift included). */
  requests: number;
  /** Distinct pages read (`<key> <resource>?<query>#<page>`): the requests' floor. */
  pages: Set<string>;
}

async function walk(
  partner: PartnerClient,
  keyId: string,
  resource: 'enrollments' | 'applications',
  wanted: Set<string>,
  found: Map<string, PartnerRecord>,
  query: Record<string, string>,
  cost: ReadCost,
): Promise<void> {
  if (wanted.size === 0) return;
  for await (const page of partner.pages(resource, query, { lane: 'poll' })) {
    cost.requests++;
    cost.pages.add(`${keyId} ${resource}?${new URLSearchParams(query).toString()}#${page.data.current_page}`);
    for (const record of page.data.items) {
      const id = String(record.id);
      if (wanted.delete(id)) found.set(id, record);
    }
    if (wanted.size === 0) break;
  }
}

/** The enrollments with these ids as the key of `partner` sees them (absent: not listed). */
export async function readEnrollments(
  partner: PartnerClient,
  keyId: string,
  ids: Iterable<string>,
  cost: ReadCost,
): Promise<Map<string, PartnerRecord>> {
  const found = new Map<string, PartnerRecord>();
  await walk(partner, keyId, 'enrollments', new Set(ids), found, {}, cost);
  return found;
}

/**
 * The applications with these ids. A decision moves an application's `updated_at` to the day it
 * lands, so the list updated since `fromDay` (the first command's day, spec 4.7) holds every
 * application a decision reached; the rest (decided before the command came, say) are looked for
 * in the whole list, which stops as soon as they are all found.
 */
export async function readApplications(
  partner: PartnerClient,
  keyId: string,
  ids: Iterable<string>,
  fromDay: string,
  cost: ReadCost,
): Promise<Map<string, PartnerRecord>> {
  const found = new Map<string, PartnerRecord>();
  const wanted = new Set(ids);
  await walk(partner, keyId, 'applications', wanted, found, { [DATE_FILTERS.filter]: fromDay }, cost);
  await walk(partner, keyId, 'applications', wanted, found, {}, cost);
  return found;
}
