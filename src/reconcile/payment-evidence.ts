import { PAYMENT_VISIBLE_ON_ENROLLMENT, REPORT_MOVES_UPDATED_AT } from '../partner/assumptions.js';
import { paymentsOn } from '../command-types/rental-payments/rental-payment-read-back.js';
import { sameTime } from '../guard/read-backs/read-back.js';
import {
  boundPassed,
  itemOf,
  type ReconcileCommand,
  type ReconcileItem,
  type VerdictClock,
} from './reconcile-types.js';

/**
 * Rental payments, by the rule the guard's read-back trusts (assumption
 * PAYMENT_VISIBLE_ON_ENROLLMENT): a reported payment is an entry of its enrollment's
 * `rental_payments` with the command's amount, date and period. Pure: the pass gives it the
 * enrollment as read and every payment command rentbridge holds for it (of any age, so an older
 * command still explains its payment), and it answers one item per command in scope plus one per
 * payment no command explains.
 */

const PAYMENT = PAYMENT_VISIBLE_ON_ENROLLMENT.payment;
const UPDATED_AT = REPORT_MOVES_UPDATED_AT.field;
/** Guard states whose write rentbridge holds as landed: they explain a payment on the platform. */
const LANDED = new Set(['applied', 'already_applied']);
/** Guard states of a command whose write may be under way: its payment is not yet explained or unexpected. */
const OPEN = new Set(['pending', 'in_flight']);

type PartnerRecord = Record<string, unknown>;

/** The three facts a payment is matched on, as one key. */
function keyOf(amount: unknown, paidOn: unknown, period: unknown): string {
  return JSON.stringify([amount ?? null, paidOn ?? null, period ?? null]);
}

function paymentKey(payment: unknown): string {
  const p = (payment ?? {}) as PartnerRecord;
  return keyOf(p[PAYMENT.amountCents], p[PAYMENT.paidOn], p[PAYMENT.period]);
}

function commandKey(command: ReconcileCommand): string {
  const c = command.payload;
  return keyOf(c.amount_cents, c.paid_on, c.period);
}

/** The payments an unverified command's baseline snapshot held with its key (null: not seen). */
function baselineCount(command: ReconcileCommand): number | null {
  const s = command.snapshot;
  if (!s || s.payments_visible === false || typeof s.matching_payments !== 'number') return null;
  return s.matching_payments;
}

/** One key's commands and payments on one enrollment: the verdicts. */
function judgeKey(
  commands: ReconcileCommand[],
  onPlatform: number,
  clock: VerdictClock,
  enrollment: PartnerRecord,
): ReconcileItem[] {
  const landed = commands.filter((c) => LANDED.has(c.state));
  const parked = commands.filter((c) => c.state === 'unverified');
  const explaining = landed.length + parked.length;
  const inScope = [...landed, ...parked].filter((c) => c.inScope);
  const evidence = { payments_with_this_key: onPlatform, commands_with_this_key: explaining };
  if (onPlatform > 1 || explaining > 1) {
    // Which payment is whose cannot be told: never confirmed, never settled on such evidence.
    const why = `${onPlatform} identical payment(s) on the enrollment for ${explaining} command(s): which is whose cannot be told`;
    return inScope.map((c) => itemOf(c, 'ambiguous', why, evidence));
  }
  const [one] = [...landed, ...parked];
  if (!one) return [];
  if (!one.inScope) return [];
  if (LANDED.has(one.state)) {
    return onPlatform === 1
      ? [itemOf(one, 'confirmed', 'the payment is on its enrollment', evidence)]
      : [itemOf(one, 'missing', 'applied, but the enrollment holds no such payment', evidence)];
  }
  return [judgeParked(one, onPlatform, clock, enrollment, evidence)];
}

/** An `unverified` payment, alone with its key on its enrollment. */
function judgeParked(
  command: ReconcileCommand,
  onPlatform: number,
  clock: VerdictClock,
  enrollment: PartnerRecord,
  evidence: Record<string, unknown>,
): ReconcileItem {
  const before = baselineCount(command);
  if (onPlatform === 1) {
    if (before === 0 || before === null) {
      return itemOf(
        command,
        'settled_applied',
        before === 0
          ? 'the payment is on its enrollment and was not before the first write'
          : 'the payment is on its enrollment, explained by no other command (the baseline could not see payments)',
        { ...evidence, baseline_matching_payments: before },
      );
    }
    return itemOf(command, 'ambiguous', 'the payment was already on the enrollment before the first write', {
      ...evidence,
      baseline_matching_payments: before,
    });
  }
  if (!boundPassed(command, clock)) {
    return itemOf(
      command,
      'unknown',
      'absent, but the processing bound has not passed since the last write',
      evidence,
    );
  }
  const unchanged =
    enrollment[UPDATED_AT] != null &&
    sameTime(String(enrollment[UPDATED_AT]), String(command.snapshot?.updated_at ?? ''));
  return itemOf(
    command,
    'settled_absent',
    'absent from its enrollment long after the processing bound: the write did not land; safe to redrive',
    { ...evidence, enrollment_unchanged_since_snapshot: unchanged },
  );
}

/**
 * The items of one enrollment. `record` null: not listed for the key that reads it. `commands`:
 * every payment command rentbridge holds for it. Payments no command explains are `unexpected`
 * when paid on or after the first payment rentbridge reported for the enrollment (earlier ones
 * predate rentbridge's part in it).
 */
export function judgeEnrollment(
  enrollmentId: string,
  record: PartnerRecord | null,
  commands: ReconcileCommand[],
  clock: VerdictClock,
): ReconcileItem[] {
  const relevant = commands.filter((c) => LANDED.has(c.state) || c.state === 'unverified');
  if (!record) {
    return relevant
      .filter((c) => c.inScope)
      .map((c) =>
        LANDED.has(c.state)
          ? itemOf(c, 'missing', 'the enrollment is not listed for the key that reported it')
          : itemOf(c, 'unknown', 'the enrollment is not listed for the key that reported it'),
      );
  }
  const payments = paymentsOn(record);
  if (payments === null) {
    return relevant
      .filter((c) => c.inScope)
      .map((c) =>
        itemOf(
          c,
          'unknown',
          `the enrollment record carries no ${PAYMENT_VISIBLE_ON_ENROLLMENT.field} list (assumption PAYMENT_VISIBLE_ON_ENROLLMENT)`,
        ),
      );
  }
  const byKey = new Map<string, { commands: ReconcileCommand[]; payments: unknown[] }>();
  const slot = (key: string) => {
    let s = byKey.get(key);
    if (!s) byKey.set(key, (s = { commands: [], payments: [] }));
    return s;
  };
  for (const c of relevant) slot(commandKey(c)).commands.push(c);
  for (const p of payments) slot(paymentKey(p)).payments.push(p);
  const firstPaidOn = commands.map((c) => String(c.payload.paid_on ?? '')).sort()[0] ?? '';
  const items: ReconcileItem[] = [];
  for (const { commands: keyed, payments: found } of byKey.values()) {
    if (keyed.length > 0) {
      items.push(...judgeKey(keyed, found.length, clock, record));
      continue;
    }
    for (const p of found) {
      const payment = p as PartnerRecord;
      if (String(payment[PAYMENT.paidOn] ?? '') < firstPaidOn) continue;
      const open = commands.find((c) => OPEN.has(c.state) && commandKey(c) === paymentKey(p));
      items.push(
        open
          ? itemOf(open, 'unknown', `a write of this payment is still under way (${open.state})`, {
              payment,
            })
          : unexpectedPayment(enrollmentId, payment, commands),
      );
    }
  }
  return items;
}

function unexpectedPayment(
  enrollmentId: string,
  payment: PartnerRecord,
  commands: ReconcileCommand[],
): ReconcileItem {
  const key = paymentKey(payment);
  // A command with this payment that rentbridge believes not applied (rejected, exhausted) is named.
  const believedNot = commands
    .filter((c) => commandKey(c) === key)
    .map((c) => `${c.source}/${c.commandId} (${c.state})`);
  return {
    verdict: 'unexpected',
    commandType: 'rental_payment',
    source: null,
    commandId: null,
    targetId: enrollmentId,
    commandState: null,
    reason:
      believedNot.length > 0
        ? `a payment on the enrollment that rentbridge believed not applied: ${believedNot.join(', ')}`
        : 'a payment on the enrollment that no command of rentbridge explains',
    evidence: { payment },
  };
}
