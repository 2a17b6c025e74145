import { byCreatedAt, byId, type Marker, type NewestFirstOrder } from '../guard/read-backs/newest-first.js';
import {
  boundPassed,
  itemOf,
  type ReconcileCommand,
  type ReconcileItem,
  type VerdictClock,
} from './reconcile-types.js';

/**
 * Customer registrations and enrollments (the onboarding commands), by the rules the guard's
 * read-back trusts (docs/decisions/018-onboarding-read-back-by-position.md). Pure: the pass gives
 * each target what the lists show for it and every command rentbridge holds for it.
 *
 * - A registration's target is its e-mail (lower-cased; the spec keeps it unique): the customer
 *   holding it, with the command's details where the record shows them, is the registration's.
 * - An enrollment's target is its customer: the customer's newest enrollment (list newest first by
 *   id), active, is the enrollment's.
 * - A parked (`unverified`) command's write landed when that record was created since its
 *   snapshot: newer than the snapshot's marker (tied with it and not held by the snapshot page,
 *   for customers). A record from before the snapshot is someone else's: the write did not create
 *   it, and could not have (the e-mail was taken, the customer enrolled), so the write is absent.
 */

type PartnerRecord = Record<string, unknown>;

const LANDED = new Set(['applied', 'already_applied']);
const OPEN = new Set(['pending', 'in_flight']);
const REFUSED = new Set(['rejected', 'exhausted']);

/** What the lists show for one target. */
export interface OnboardingEvidence {
  /** The customer holding the e-mail, or the customer's newest enrollment; null: none listed. */
  record: PartnerRecord | null;
  /** Records read that showed no e-mail (customer id): an absence proves nothing then. */
  unkeyed: number;
}

interface Rule {
  commandType: string;
  order: NewestFirstOrder;
  /** The record is the command's effect (details, status), for a landed command. */
  holds(record: PartnerRecord, command: ReconcileCommand): string | null;
  what: string;
  absent: string;
}

type Place = 'since' | 'before' | 'unplaced';

/** Where a record lies against a command's snapshot: created since it, before it, or cannot tell. */
function placeOf(rule: Rule, record: PartnerRecord, command: ReconcileCommand): Place {
  const snapshot = command.snapshot;
  if (!snapshot || !('marker' in snapshot)) return 'unplaced';
  const marker = (snapshot.marker ?? null) as Marker | null;
  if (marker === null) return 'since'; // the list was empty at the snapshot
  if (String(record.id) === marker.id) return 'before';
  const held = new Set(marker.tied_ids ?? [marker.id]);
  switch (rule.order.place(record, marker)) {
    case 'newer':
      return 'since';
    case 'older':
      return 'before';
    case 'tied':
      if (held.has(String(record.id))) return 'before';
      return marker.tied_complete === true ? 'since' : 'unplaced';
    default:
      return 'unplaced';
  }
}

function judgeParked(
  rule: Rule,
  command: ReconcileCommand,
  evidence: OnboardingEvidence,
  clock: VerdictClock,
): ReconcileItem {
  const { record } = evidence;
  const place = record ? placeOf(rule, record, command) : 'before';
  const shown = { record, unkeyed: evidence.unkeyed };
  if (record && place === 'since') {
    const other = rule.holds(record, command);
    return other === null || rule.commandType === 'enrollment'
      ? itemOf(
          command,
          'settled_applied',
          `${rule.what} was created since the snapshot: the write landed`,
          shown,
        )
      : itemOf(command, 'unknown', `${rule.what} was created since the snapshot, ${other}`, shown);
  }
  if (place === 'unplaced')
    return itemOf(command, 'unknown', `${rule.what} cannot be placed before or after the snapshot`, shown);
  if (!record && evidence.unkeyed > 0)
    return itemOf(
      command,
      'unknown',
      `${rule.absent}, but ${evidence.unkeyed} record(s) read show no key`,
      shown,
    );
  if (!boundPassed(command, clock))
    return itemOf(
      command,
      'unknown',
      'nothing created since the snapshot, but the processing bound has not passed',
      shown,
    );
  return itemOf(
    command,
    'settled_absent',
    `${record ? `${rule.what} predates the snapshot` : rule.absent}, long after the processing bound: the write did not land; safe to redrive`,
    shown,
  );
}

function judgeLanded(rule: Rule, command: ReconcileCommand, evidence: OnboardingEvidence): ReconcileItem {
  const { record } = evidence;
  const shown = { record, unkeyed: evidence.unkeyed };
  if (!record) {
    return evidence.unkeyed > 0
      ? itemOf(
          command,
          'unknown',
          `${rule.absent}, but ${evidence.unkeyed} record(s) read show no key`,
          shown,
        )
      : itemOf(command, 'missing', `applied, but ${rule.absent}`, shown);
  }
  const other = rule.holds(record, command);
  if (other === null) return itemOf(command, 'confirmed', `${rule.what} is on the platform`, shown);
  return itemOf(
    command,
    rule.commandType === 'enrollment' ? 'missing' : 'ambiguous',
    `${rule.what}: ${other}`,
    shown,
  );
}

/** A record created since a command rentbridge holds as refused or given up: explained by none. */
function unexpected(
  rule: Rule,
  target: string,
  evidence: OnboardingEvidence,
  commands: ReconcileCommand[],
): ReconcileItem[] {
  const { record } = evidence;
  if (!record) return [];
  const open = commands.find((c) => OPEN.has(c.state));
  const believedNot = commands.filter(
    (c) => c.inScope && REFUSED.has(c.state) && placeOf(rule, record, c) === 'since',
  );
  if (believedNot.length === 0) return [];
  if (open)
    return [itemOf(open, 'unknown', `a write of this target is still under way (${open.state})`, { record })];
  return [
    {
      verdict: 'unexpected',
      commandType: rule.commandType,
      source: null,
      commandId: null,
      targetId: target,
      commandState: null,
      reason: `${rule.what} was created after a write rentbridge believed not applied: ${believedNot
        .map((c) => `${c.source}/${c.commandId} (${c.state})`)
        .join(', ')}`,
      evidence: { record },
    },
  ];
}

function judge(
  rule: Rule,
  target: string,
  evidence: OnboardingEvidence,
  commands: ReconcileCommand[],
  clock: VerdictClock,
): ReconcileItem[] {
  const explaining = commands.filter((c) => LANDED.has(c.state) || c.state === 'unverified');
  if (explaining.length === 0) return unexpected(rule, target, evidence, commands);
  const inScope = explaining.filter((c) => c.inScope);
  if (explaining.length > 1) {
    const why = `${explaining.length} commands for one ${rule.commandType === 'enrollment' ? 'customer' : 'e-mail'}: which record is whose cannot be told`;
    return inScope.map((c) => itemOf(c, 'ambiguous', why, { record: evidence.record }));
  }
  return inScope.map((c) =>
    c.state === 'unverified' ? judgeParked(rule, c, evidence, clock) : judgeLanded(rule, c, evidence),
  );
}

const DETAILS = ['first_name', 'last_name', 'phone'] as const;

const CUSTOMER: Rule = {
  commandType: 'customer_registration',
  order: byCreatedAt,
  what: 'the customer holding the e-mail',
  absent: 'no customer holds the e-mail',
  holds(record, command) {
    const differ = DETAILS.filter((f) => record[f] !== undefined && record[f] !== command.payload[f]);
    return differ.length === 0 ? null : `its ${differ.join(', ')} differ from the command's`;
  },
};

const ENROLLMENT: Rule = {
  commandType: 'enrollment',
  order: byId,
  what: "the customer's newest enrollment",
  absent: 'the customer has no enrollment',
  holds: (record) => (record.status === 'active' ? null : `it is ${String(record.status)}, not active`),
};

/** A registration's items: its target is the e-mail (lower-cased). */
export function judgeCustomer(
  email: string,
  evidence: OnboardingEvidence,
  commands: ReconcileCommand[],
  clock: VerdictClock,
): ReconcileItem[] {
  return judge(CUSTOMER, email, evidence, commands, clock);
}

/** An enrollment's items: its target is the customer's id. */
export function judgeCustomerEnrollment(
  customerId: string,
  evidence: OnboardingEvidence,
  commands: ReconcileCommand[],
  clock: VerdictClock,
): ReconcileItem[] {
  return judge(ENROLLMENT, customerId, evidence, commands, clock);
}
