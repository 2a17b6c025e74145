import type { EnrollmentCommand } from '../../contracts/commands.js';
import type { GuardPartner } from '../../guard/read-backs/partner-port.js';
import {
  type SnapshotPageCache,
  baseSnapshot,
  type ReadBackStrategy,
} from '../../guard/read-backs/read-back.js';
import type { SnapshotStore } from '../../guard/read-backs/snapshot-store.js';
import { newestFirstSnapshotPage, wroteFor } from '../../guard/read-backs/snapshot-first-page.js';
import { byId, createdSince, type Marker } from '../../guard/read-backs/newest-first.js';

type PartnerRecord = Record<string, unknown>;

export function enrollmentOf(record: PartnerRecord, customerId: string): boolean {
  return record.customer_id != null && String(record.customer_id) === customerId;
}

/**
 * Enrollment (ASSUMPTION, src/partner/assumptions.ts: `POST /partner/v1/enrollments` with
 * `{ customer_id }`). A customer holds one active enrollment at most (spec 3); a second is
 * refused with the legacy business-rule error (400, no code), which the guard ends `rejected`.
 * The read-back tells "ours, applied by a request that timed out" from "someone else's, there
 * before" by position (src/guard/read-backs/newest-first.ts): the enrollment list is newest first by id
 * (spec 4.6.2) and records created while paging appear at the start (4.6.4).
 *
 * - snapshot: page 1 (issue 43: the latest stored read of it when younger than
 *   SNAPSHOT_MAX_AGE_MS, src/guard/read-backs/snapshot-first-page.ts); its newest record is the marker; an active enrollment of the customer on it
 *   is noted (`existing_enrollment_id`).
 * - verdict: the enrollments created since the marker. One for the customer → `applied` (it did
 *   not exist at the snapshot; a customer's enrollments before that lie beyond the marker and are
 *   never taken for ours). None, the walk complete, and every record showing its customer_id →
 *   `not_applied`. Else `unknown`.
 */
export function enrollmentReadBack(
  partner: GuardPartner,
  // The in-process page cache is not used (see firstPage); the stored first page is.
  options: { snapshotCache?: SnapshotPageCache; snapshotStore?: SnapshotStore } = {},
): ReadBackStrategy<EnrollmentCommand> {
  const store = options.snapshotStore;
  return {
    async snapshot(command, ctx) {
      const page = await newestFirstSnapshotPage(partner, 'enrollments', ctx, {
        ...(store && { store }),
        keep: (r) => ({ id: r.id, customer_id: r.customer_id, status: r.status }),
        target: String(command.customer_id),
      });
      const existing =
        page.items.find((r) => enrollmentOf(r, command.customer_id) && r.status === 'active') ?? null;
      return {
        ...baseSnapshot(existing),
        taken_at: new Date(page.askedAt).toISOString(),
        marker: page.marker,
        existing_enrollment_id: existing ? String(existing.id) : null,
      };
    },

    async verdict(command, snapshot, ctx) {
      const marker = (snapshot.marker ?? null) as Marker | null;
      const walk = await createdSince(partner, 'enrollments', marker, byId, ctx);
      if (walk.records.some((r) => enrollmentOf(r, command.customer_id))) return 'applied';
      if (walk.uncertain.some((r) => enrollmentOf(r, command.customer_id))) return 'unknown';
      if (!walk.complete) {
        if (walk.why) ctx.missing?.(walk.why);
        return 'unknown';
      }
      if ([...walk.records, ...walk.uncertain].some((r) => r.customer_id == null)) return 'unknown';
      return 'not_applied';
    },

    async write(command, requestId) {
      try {
        return await partner.createEnrollment(
          { customer_id: command.customer_id },
          { requestId, lane: 'write' },
        );
      } finally {
        await wroteFor(store, 'enrollments', String(command.customer_id));
      }
    },
  };
}
