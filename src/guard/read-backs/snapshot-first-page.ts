import { firstPage, markerOf, type CreatedResource, type Marker } from './newest-first.js';
import type { GuardPartner } from './partner-port.js';
import type { ReadContext } from './read-back.js';
import type { SnapshotStore } from './snapshot-store.js';

type PartnerRecord = Record<string, unknown>;

/**
 * Page 1 of a newest-first list as an onboarding snapshot needs it (issue 43 item 2,
 * docs/decisions/049-onboarding-snapshots-and-adaptive-callbacks.md): its marker, and the records
 * on it reduced to the fields the strategy looks at (a customer's e-mail, an enrollment's
 * customer and status).
 */
export interface FirstPageSnapshot {
  marker: Marker | null;
  items: PartnerRecord[];
  /** When the page was asked for, on this process's clock (ms). */
  askedAt: number;
  /** Partner requests it cost: 0 when it came from a stored read. */
  requests: number;
}

/** Where a stored first page lives in `snapshot_reads`: one row per list and key. */
const FIRST_PAGE_ID = 'page-1';
const storedAs = (resource: CreatedResource) => `${resource}#first-page`;
/** Where our writes per target are noted (a customer's id, a registration's e-mail). */
const writesAs = (resource: CreatedResource) => `${resource}#writes-for`;

/**
 * A write of ours for `target` (an enrollment's customer, a registration's lower-cased e-mail) just
 * ended, answered or not: a stored page 1 read before it no longer serves a snapshot for that
 * target. Called by the read-backs' `write`.
 */
export async function wroteFor(
  store: SnapshotStore | undefined,
  resource: CreatedResource,
  target: string,
): Promise<void> {
  await store?.wroteFor(writesAs(resource), target);
}

type Fresh = Pick<FirstPageSnapshot, 'marker' | 'items' | 'askedAt'>;
/** Reads of page 1 under way, per store and list: snapshots asking meanwhile share the read. */
const underWay = new WeakMap<SnapshotStore, Map<CreatedResource, Promise<Fresh>>>();

/**
 * A snapshot only has to be read before the write: a page 1 read by any process up to
 * `SNAPSHOT_MAX_AGE_MS` ago gives an older marker, and an older marker only lengthens the prefix
 * the verdict walks ("created since the snapshot"), so a record our write created is still in it
 * and `not_applied` stays proven by its absence. Every fresh page 1 is stored for the next
 * snapshot; a stored one that is too old is refused and the page read again.
 */
export async function newestFirstSnapshotPage(
  partner: GuardPartner,
  resource: CreatedResource,
  ctx: ReadContext,
  options: {
    store?: SnapshotStore;
    keep: (record: PartnerRecord) => PartnerRecord;
    /**
     * The command's target (an enrollment's customer, a registration's lower-cased e-mail). A
     * stored page read before a write of ours for the same target ended is not used: that write's
     * record would not be on it and would be taken for this command's (chaos run, stop 46).
     */
    target: string;
  },
): Promise<FirstPageSnapshot> {
  const { store, keep, target } = options;
  const stored = store ? await store.find(storedAs(resource), FIRST_PAGE_ID).catch(() => null) : null;
  const facts = stored?.usable ? parse(stored.record) : null;
  if (facts && stored?.askedAt != null) {
    const since = stored.askedAt;
    const written = await store!.wroteSince(writesAs(resource), target, since).catch(() => true);
    if (!written) return { ...facts, askedAt: since, requests: 0 };
  }
  const read = async (): Promise<Fresh> => {
    const askedAt = Date.now();
    const page = await firstPage(partner, resource, ctx);
    const fresh = { marker: markerOf(page), items: page.items.map(keep) };
    // Stored for the next snapshot (any process); a failure to store costs only a later request.
    await store
      ?.savePage(storedAs(resource), [{ id: FIRST_PAGE_ID, ...fresh }], askedAt)
      .catch(() => undefined);
    return { ...fresh, askedAt };
  };
  if (!store) return { ...(await read()), requests: 1 };
  // A read another snapshot started is also asked for before this command's write.
  const reads = underWay.get(store) ?? new Map<CreatedResource, Promise<Fresh>>();
  underWay.set(store, reads);
  const shared = reads.get(resource);
  if (shared) return { ...(await shared), requests: 0 };
  const mine = read();
  reads.set(resource, mine);
  try {
    return { ...(await mine), requests: 1 };
  } finally {
    reads.delete(resource);
  }
}

function parse(record: PartnerRecord | null | undefined): Pick<FirstPageSnapshot, 'marker' | 'items'> | null {
  if (!record || !Array.isArray(record.items) || !('marker' in record)) return null;
  return { marker: (record.marker ?? null) as Marker | null, items: record.items as PartnerRecord[] };
}
