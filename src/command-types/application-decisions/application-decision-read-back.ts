import type { ApplicationDecisionCommand } from '../../contracts/commands.js';
import { DATE_FILTERS, DECISION_VISIBLE_ON_APPLICATION } from '../../partner/assumptions.js';
import type { GuardPartner } from '../../guard/read-backs/partner-port.js';
import {
  type SnapshotPageCache,
  baseSnapshot,
  findRecord,
  sameTime,
  utcDay,
  type ReadBackStrategy,
} from '../../guard/read-backs/read-back.js';
import { findSnapshotRecord } from '../../guard/read-backs/snapshot-read.js';
import type { SnapshotStore } from '../../guard/read-backs/snapshot-store.js';

/** The status an application reaches when the decision is applied. */
export const DECISION_TARGET_STATUS = DECISION_VISIBLE_ON_APPLICATION.targetStatus;

// The names the decision read-back reads, from the assumptions it rests on (the probe checks them).
const APPLICATIONS = DECISION_VISIBLE_ON_APPLICATION.collection;
const STATUS = DECISION_VISIBLE_ON_APPLICATION.status;
const UPDATED_AT = DECISION_VISIBLE_ON_APPLICATION.updatedAt;
const FROM_DATE = DATE_FILTERS.filter;

/**
 * Applications: a decision moves `status` to approved/declined and `updated_at` to now, so the
 * date-filtered list from the snapshot's day (inclusive, whole UTC days, spec 4.7) holds the
 * record if it changed after the snapshot. Absent from that list while its snapshot's updated_at
 * was before that day: it has not changed since, so the write did not land, and it still holds
 * the snapshot's status (one list page, whatever day it was last changed).
 */
export function applicationDecisionReadBack(
  partner: GuardPartner,
  options: { snapshotCache?: SnapshotPageCache; snapshotStore?: SnapshotStore } = {},
): ReadBackStrategy<ApplicationDecisionCommand> {
  const cache = options.snapshotCache;
  const store = options.snapshotStore;
  return {
    async snapshot(command, ctx) {
      const { record, askedAt } = await findSnapshotRecord(
        partner,
        APPLICATIONS,
        command.application_id,
        ctx,
        {
          ...(cache && { cache }),
          ...(store && { store }),
        },
      );
      // taken_at is the read's own time: the verdict reads from its UTC day (issue 43).
      return { ...baseSnapshot(record), taken_at: new Date(askedAt).toISOString() };
    },

    async verdict(command, snapshot, ctx) {
      const from = utcDay(snapshot.taken_at);
      const now = await findRecord(partner, APPLICATIONS, command.application_id, { [FROM_DATE]: from }, ctx);
      if (now) {
        if (now[STATUS] === DECISION_TARGET_STATUS[command.decision]) return 'applied';
        // Guard assumption DECISION_VISIBLE_ON_APPLICATION: no status or updated_at, no evidence.
        if (now[STATUS] == null || now[UPDATED_AT] == null) {
          ctx.missing?.(
            `the application record carries no ${STATUS} or ${UPDATED_AT} (assumption DECISION_VISIBLE_ON_APPLICATION)`,
          );
          return 'unknown';
        }
        if (snapshot.found && sameTime(String(now[UPDATED_AT] ?? ''), snapshot.updated_at))
          return 'not_applied';
        return 'unknown';
      }
      if (!snapshot.found) return 'not_applied';
      // Not updated since `from` began: untouched since the snapshot, unless it changed that day.
      // Untouched, it still holds the snapshot's status: one decided on an earlier day is in the
      // target state already (a 409 invalid_state_transition then settles as already_applied).
      if (snapshot.updated_at != null && utcDay(snapshot.updated_at) < from)
        return snapshot.status === DECISION_TARGET_STATUS[command.decision] ? 'applied' : 'not_applied';
      return 'unknown';
    },

    async write(command, requestId) {
      const body = command.reason === undefined ? {} : { reason: command.reason };
      const call = { requestId, lane: 'write' } as const;
      try {
        return await (command.decision === 'approve'
          ? partner.approveApplication(command.application_id, body, call)
          : partner.declineApplication(command.application_id, body, call));
      } finally {
        cache?.wrote(APPLICATIONS, command.application_id);
        await store?.wrote(APPLICATIONS, command.application_id);
      }
    },
  };
}
