import { DECISION_VISIBLE_ON_APPLICATION } from '../partner/assumptions.js';
import { sameTime } from '../guard/read-backs/read-back.js';
import {
  boundPassed,
  itemOf,
  type ReconcileCommand,
  type ReconcileItem,
  type VerdictClock,
} from './reconcile-types.js';

/**
 * Application decisions, by the rule the guard's read-back trusts (assumption
 * DECISION_VISIBLE_ON_APPLICATION): a decision is applied when its application holds the status the
 * decision leads to. Pure. A later decision of the same application (approve, then decline) is the
 * one the record answers for: an earlier one whose status the record no longer holds is
 * `ambiguous`, not `missing`.
 */

const STATUS = DECISION_VISIBLE_ON_APPLICATION.status;
const UPDATED_AT = DECISION_VISIBLE_ON_APPLICATION.updatedAt;
const TARGET = DECISION_VISIBLE_ON_APPLICATION.targetStatus as Record<string, string>;

type PartnerRecord = Record<string, unknown>;

export function judgeApplication(
  record: PartnerRecord | null,
  commands: ReconcileCommand[],
  clock: VerdictClock,
): ReconcileItem[] {
  const relevant = commands.filter((c) => ['applied', 'already_applied', 'unverified'].includes(c.state));
  const targets = new Set(relevant.map((c) => TARGET[String(c.payload.decision)]));
  return relevant.filter((c) => c.inScope).map((c) => judgeOne(c, record, targets.size > 1, clock));
}

function judgeOne(
  command: ReconcileCommand,
  record: PartnerRecord | null,
  contested: boolean,
  clock: VerdictClock,
): ReconcileItem {
  const target = TARGET[String(command.payload.decision)];
  const landed = command.state !== 'unverified';
  if (!record || record[STATUS] == null) {
    return itemOf(
      command,
      landed ? 'missing' : 'unknown',
      'the application is not listed, or carries no status',
    );
  }
  const evidence = { status: record[STATUS], updated_at: record[UPDATED_AT] ?? null, target_status: target };
  if (record[STATUS] === target) {
    if (landed) return itemOf(command, 'confirmed', `the application is ${target}`, evidence);
    if (command.snapshot?.status === target) {
      return itemOf(
        command,
        'ambiguous',
        `the application was ${target} already before the first write`,
        evidence,
      );
    }
    return itemOf(command, 'settled_applied', `the application is ${target}: the decision landed`, evidence);
  }
  if (contested) {
    return itemOf(
      command,
      'ambiguous',
      'other decisions of this application were made: the record answers for the last',
      evidence,
    );
  }
  if (landed)
    return itemOf(command, 'missing', `applied, but the application is ${String(record[STATUS])}`, evidence);
  const unchanged = sameTime(String(record[UPDATED_AT] ?? ''), String(command.snapshot?.updated_at ?? ''));
  if (unchanged && boundPassed(command, clock)) {
    return itemOf(
      command,
      'settled_absent',
      'the application is unchanged since the snapshot, long after the processing bound: the decision did not land; safe to redrive',
      evidence,
    );
  }
  return itemOf(
    command,
    'unknown',
    'the application changed since the snapshot, but not to the decision',
    evidence,
  );
}
