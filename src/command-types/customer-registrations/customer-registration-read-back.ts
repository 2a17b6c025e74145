import type { CustomerRegistrationCommand } from '../../contracts/commands.js';
import { CUSTOMERS_NEWEST_FIRST } from '../../partner/assumptions.js';
import type { GuardPartner } from '../../guard/read-backs/partner-port.js';
import {
  type SnapshotPageCache,
  baseSnapshot,
  type ReadBackStrategy,
} from '../../guard/read-backs/read-back.js';
import type { SnapshotStore } from '../../guard/read-backs/snapshot-store.js';
import { newestFirstSnapshotPage, wroteFor } from '../../guard/read-backs/snapshot-first-page.js';
import { byCreatedAt, createdSince, type Marker } from '../../guard/read-backs/newest-first.js';

type PartnerRecord = Record<string, unknown>;

export function sameEmail(record: PartnerRecord, email: string): boolean {
  return typeof record.email === 'string' && record.email.toLowerCase() === email.toLowerCase();
}

/** The command's other fields, where the record shows them, are the command's. */
function sameDetails(record: PartnerRecord, command: CustomerRegistrationCommand): boolean {
  return (['first_name', 'last_name', 'phone'] as const).every(
    (field) => record[field] === undefined || record[field] === command[field],
  );
}

/**
 * Customer registration (`POST /v1/partners/customers`). The customer has no id before the write,
 * so the read-back works by position (src/guard/read-backs/newest-first.ts): the customer list is newest
 * first by `created_at` (spec 4.2), records created while paging appear at the start (4.6.4).
 *
 * - snapshot: page 1 of the list (issue 43: the latest stored read of it when younger than
 *   SNAPSHOT_MAX_AGE_MS, src/guard/read-backs/snapshot-first-page.ts; an older marker only lengthens the
 *   prefix the verdict walks); its newest record is the marker, and the ids of page 1's
 *   records sharing its `created_at` are kept (they predate the write, so none is ours); a
 *   customer on it with the command's e-mail is noted (`existing_customer_id`: the e-mail was
 *   taken before the write).
 * - verdict: walk from page 1 to the first record strictly older than the marker: the customers
 *   created since the snapshot are the newer ones and those tied with the marker that the snapshot
 *   did not hold, before or after it, whichever way the API breaks ties and however precise its
 *   `created_at` is. One with the command's e-mail (unique per the spec) and details → `applied`;
 *   with other details → `unknown` (someone else's). None, the walk complete, and every record in
 *   it showing an e-mail → `not_applied`: a customer our write created would be in that prefix. A
 *   customer with the e-mail created before the snapshot is older than the marker or held by the
 *   snapshot, so it is never taken for ours; the retry is then refused (e-mail taken) and the
 *   command ends `rejected`.
 * - anything incomplete (drift that did not settle, a record or marker without `created_at`, a
 *   record without an e-mail) → `unknown`.
 */
export function customerRegistrationReadBack(
  partner: GuardPartner,
  // The in-process page cache is not used (see firstPage); the stored first page is.
  options: { snapshotCache?: SnapshotPageCache; snapshotStore?: SnapshotStore } = {},
): ReadBackStrategy<CustomerRegistrationCommand> {
  const store = options.snapshotStore;
  return {
    async snapshot(command, ctx) {
      const page = await newestFirstSnapshotPage(partner, CUSTOMERS_NEWEST_FIRST.collection, ctx, {
        ...(store && { store }),
        keep: (r) => ({ id: r.id, email: r.email }),
        target: command.email.toLowerCase(),
      });
      const existing = page.items.find((r) => sameEmail(r, command.email)) ?? null;
      return {
        ...baseSnapshot(existing),
        // The read it rests on may be older than this moment (a stored read).
        taken_at: new Date(page.askedAt).toISOString(),
        marker: page.marker,
        existing_customer_id: existing ? String(existing.id) : null,
      };
    },

    async verdict(command, snapshot, ctx) {
      const marker = (snapshot.marker ?? null) as Marker | null;
      const walk = await createdSince(partner, CUSTOMERS_NEWEST_FIRST.collection, marker, byCreatedAt, ctx);
      const match = walk.records.find((r) => sameEmail(r, command.email));
      if (match) return sameDetails(match, command) ? 'applied' : 'unknown';
      if (walk.uncertain.some((r) => sameEmail(r, command.email))) {
        ctx.missing?.(
          'a customer with the e-mail that the list order cannot place before or after the snapshot',
        );
        return 'unknown';
      }
      if (!walk.complete) {
        if (walk.why) ctx.missing?.(walk.why);
        return 'unknown';
      }
      // A record of unknown shape could be ours: no proof of absence then.
      if ([...walk.records, ...walk.uncertain].some((r) => typeof r.email !== 'string')) {
        ctx.missing?.('a customer created since the snapshot shows no e-mail');
        return 'unknown';
      }
      return 'not_applied';
    },

    async write(command, requestId) {
      const { first_name, last_name, email, phone } = command;
      try {
        return await partner.createCustomer(
          { first_name, last_name, email, phone },
          { requestId, lane: 'write' },
        );
      } finally {
        await wroteFor(store, CUSTOMERS_NEWEST_FIRST.collection, email.toLowerCase());
      }
    },
  };
}
