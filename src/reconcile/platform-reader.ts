import type { PartnerClient } from '../partner/index.js';
import type { PagedResource } from '../partner/endpoints.js';
import { DATE_FILTERS } from '../partner/assumptions.js';
import { newestFirstQuery } from '../guard/read-backs/newest-first.js';

/**
 * Reads the records a pass needs from the Partner API, on the poll lane of the shared budget
 * (decision 015: writes and read-backs keep their priority). The spec has no single-record GET, so
 * records are found in the lists: each list is walked once per key and pass (drift-safe, spec
 * 4.6.4: a page is read again only to recover from a deletion that shifted it), and the walk
 * stops as soon as every record asked for is found, so a pass reads the pages that hold its
 * records and no more. A walk is kept open for the pass: a later question to the same list (the
 * enrollments, for payments and then for enrollments) first looks through the records already
 * read and reads on only from where the walk stopped.
 */

type PartnerRecord = Record<string, unknown>;

export interface ReadCost {
  /** List requests made (each page read, re-reads after a shift included). */
  requests: number;
  /** Distinct pages read (`<key> <resource>?<query>#<page>`): the requests' floor. */
  pages: Set<string>;
}

/** What a question to a list found. */
export interface Found {
  records: Map<string, PartnerRecord>;
  /** Records read (in the whole walk so far) that showed no key. */
  unkeyed: number;
}

/** One list, walked at most once in a pass, as far as its questions need. */
interface OpenWalk {
  seen: PartnerRecord[];
  rest: AsyncIterator<{ data: { items: PartnerRecord[]; current_page?: number } }> | null;
}

/** The pass's walks, by key and list: see the module comment. */
export interface PlatformReader {
  /**
   * The records whose `keyOf` is one of `wanted`, the first (newest) one per value. A value not
   * found was looked for in the whole list; `unkeyed` counts the records read that showed no key
   * (one of them may be the record looked for: its absence proves nothing then).
   */
  find(
    resource: PagedResource,
    query: Record<string, string>,
    wanted: Iterable<string>,
    keyOf: (record: PartnerRecord) => string | null,
  ): Promise<Found>;
  /** Stops every open walk (the pass is over). */
  close(): Promise<void>;
}

export function createPlatformReader(partner: PartnerClient, keyId: string, cost: ReadCost): PlatformReader {
  const walks = new Map<string, OpenWalk>();
  const walkOf = (resource: PagedResource, query: Record<string, string>): [string, OpenWalk] => {
    const name = `${keyId} ${resource}?${new URLSearchParams(query).toString()}`;
    let w = walks.get(name);
    if (!w) {
      const pages = partner.pages(resource, query as never, { lane: 'poll' });
      w = { seen: [], rest: pages[Symbol.asyncIterator]() as OpenWalk['rest'] };
      walks.set(name, w);
    }
    return [name, w];
  };
  return {
    async find(resource, query, ids, keyOf) {
      const wanted = new Set(ids);
      const found = new Map<string, PartnerRecord>();
      let unkeyed = 0;
      const take = (record: PartnerRecord) => {
        const key = keyOf(record);
        if (key === null) unkeyed++;
        else if (wanted.delete(key)) found.set(key, record);
      };
      const [name, w] = walkOf(resource, query);
      for (const record of w.seen) {
        if (wanted.size === 0) return { records: found, unkeyed };
        take(record);
      }
      while (wanted.size > 0 && w.rest) {
        const next = await w.rest.next();
        if (next.done) {
          w.rest = null;
          break;
        }
        cost.requests++;
        cost.pages.add(`${name}#${String(next.value.data.current_page)}`);
        for (const record of next.value.data.items) {
          w.seen.push(record);
          take(record);
        }
      }
      return { records: found, unkeyed };
    },
    async close() {
      for (const w of walks.values()) await w.rest?.return?.();
      walks.clear();
    },
  };
}

const byId = (record: PartnerRecord) => (record.id == null ? null : String(record.id));

/** The enrollments with these ids as the key reading them sees them (absent: not listed). */
export async function readEnrollments(reader: PlatformReader, ids: Iterable<string>) {
  return (await reader.find('enrollments', {}, ids, byId)).records;
}

/**
 * Each customer's newest enrollment (the list is newest first by id, spec 4.6.2; a customer holds
 * one active enrollment at most, spec 3): the one an enrollment command created, if any did.
 */
export function readEnrollmentsOfCustomers(reader: PlatformReader, customerIds: Iterable<string>) {
  return reader.find('enrollments', {}, customerIds, (r) =>
    r.customer_id == null ? null : String(r.customer_id),
  );
}

/**
 * The customers holding these e-mails (lower-cased, as the guard keys registrations), newest
 * first by `created_at` (CUSTOMERS_NEWEST_FIRST): the customers rentbridge registered lately are
 * on the first pages.
 */
export function readCustomersByEmail(reader: PlatformReader, emails: Iterable<string>) {
  return reader.find('customers', newestFirstQuery('customers'), emails, (r) =>
    typeof r.email === 'string' ? r.email.toLowerCase() : null,
  );
}

/**
 * The applications with these ids. A decision moves an application's `updated_at` to the day it
 * lands, so the list updated since `fromDay` (the first command's day, spec 4.7) holds every
 * application a decision reached; the rest (decided before the command came, say) are looked for
 * in the whole list, which stops as soon as they are all found.
 */
export async function readApplications(
  reader: PlatformReader,
  ids: string[],
  fromDay: string,
): Promise<Map<string, PartnerRecord>> {
  const found = (await reader.find('applications', { [DATE_FILTERS.filter]: fromDay }, ids, byId)).records;
  const rest = ids.filter((id) => !found.has(id));
  if (rest.length === 0) return found;
  for (const [id, record] of (await reader.find('applications', {}, rest, byId)).records)
    found.set(id, record);
  return found;
}
