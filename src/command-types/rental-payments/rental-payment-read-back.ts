import type { RentalPaymentCommand } from '../../contracts/commands.js';
import { PAYMENT_VISIBLE_ON_ENROLLMENT, REPORT_MOVES_UPDATED_AT } from '../../partner/assumptions.js';
import type { GuardPartner } from '../../guard/read-backs/partner-port.js';
import type { PaymentLedger } from './payment-ledger.js';
import {
  type SnapshotPageCache,
  baseSnapshot,
  findRecord,
  sameTime,
  type ReadBackStrategy,
  type ReadContext,
} from '../../guard/read-backs/read-back.js';
import { findSnapshotRecord } from '../../guard/read-backs/snapshot-read.js';
import type { SnapshotStore } from '../../guard/read-backs/snapshot-store.js';

// The names the payment read-back reads, from the assumptions it rests on (the probe checks them).
const ENROLLMENTS = PAYMENT_VISIBLE_ON_ENROLLMENT.collection;
const PAYMENTS = PAYMENT_VISIBLE_ON_ENROLLMENT.field;
const PAYMENT = PAYMENT_VISIBLE_ON_ENROLLMENT.payment;
const UPDATED_AT = REPORT_MOVES_UPDATED_AT.field;

function matches(command: RentalPaymentCommand, payment: unknown): boolean {
  const p = (payment ?? {}) as Record<string, unknown>;
  return (
    p[PAYMENT.amountCents] === command.amount_cents &&
    p[PAYMENT.paidOn] === command.paid_on &&
    (p[PAYMENT.period] ?? null) === (command.period ?? null)
  );
}

/** The payments listed on an enrollment record, or null when it carries no list of them. */
export function paymentsOn(record: Record<string, unknown> | null | undefined): unknown[] | null {
  const payments = record?.[PAYMENTS];
  return Array.isArray(payments) ? payments : null;
}

function countMatching(command: RentalPaymentCommand, record: Record<string, unknown> | null): number {
  return (paymentsOn(record) ?? []).filter((p) => matches(command, p)).length;
}

/**
 * Payments, by the snapshot rule (guard assumptions PAYMENT_VISIBLE_ON_ENROLLMENT and
 * REPORT_MOVES_UPDATED_AT, src/partner/assumptions.ts): the enrollment list has no date filter, so the enrollment is
 * found by its page (issue 43: the latest stored read when young enough, else the page that held
 * it, src/guard/read-backs/snapshot-read.ts). One more payment with this amount, date and period than the snapshot held →
 * applied; `updated_at` unchanged → not applied; anything else (changed, but not by a payment
 * we can recognise) → unknown.
 *
 * A snapshot taken while the platform kept payments off the enrollment holds no count: once they
 * show, `ledger` (rentbridge's own guard rows) completes the baseline as reconciliation does
 * (decisions 045, 047): exactly one matching payment that no other command of rentbridge
 * explains is this one's → applied. Never `not_applied` on such a baseline.
 */
export function rentalPaymentReadBack(
  partner: GuardPartner,
  options: { snapshotCache?: SnapshotPageCache; snapshotStore?: SnapshotStore; ledger?: PaymentLedger } = {},
): ReadBackStrategy<RentalPaymentCommand> {
  const cache = options.snapshotCache;
  const store = options.snapshotStore;
  const ledger = options.ledger;
  return {
    async snapshot(command, ctx) {
      const { record, askedAt } = await findSnapshotRecord(partner, ENROLLMENTS, command.enrollment_id, ctx, {
        ...(cache && { cache }),
        ...(store && { store }),
      });
      return {
        ...baseSnapshot(record),
        // The read it rests on may be older than this moment (a shared or stored read).
        taken_at: new Date(askedAt).toISOString(),
        matching_payments: countMatching(command, record),
        payments_visible: record == null || paymentsOn(record) !== null,
      };
    },

    async verdict(command, snapshot, ctx) {
      const now = await findRecord(partner, ENROLLMENTS, command.enrollment_id, {}, ctx);
      if (!now) {
        if (!snapshot.found) return 'not_applied';
        ctx.missing?.('the enrollment is no longer listed');
        return 'unknown';
      }
      // Guard assumption PAYMENT_VISIBLE_ON_ENROLLMENT: without the list of payments on the
      // record, "no new payment" is no evidence at all.
      if (paymentsOn(now) === null) {
        ctx.missing?.(
          `the enrollment record carries no ${PAYMENTS} list, so a reported payment cannot be seen on it (assumption PAYMENT_VISIBLE_ON_ENROLLMENT)`,
        );
        return 'unknown';
      }
      if (snapshot.payments_visible === false) return hiddenBaselineVerdict(command, now, ledger, ctx);
      const before = typeof snapshot.matching_payments === 'number' ? snapshot.matching_payments : 0;
      if (countMatching(command, now) > before) return 'applied';
      if (now[UPDATED_AT] == null || snapshot.updated_at == null) {
        ctx.missing?.(`the enrollment record carries no ${UPDATED_AT} (assumption REPORT_MOVES_UPDATED_AT)`);
        return 'unknown';
      }
      if (snapshot.found && sameTime(String(now[UPDATED_AT]), snapshot.updated_at)) return 'not_applied';
      return 'unknown';
    },

    async write(command, requestId) {
      // The report's body is REPORT_RENTAL_PAYMENTS_PATH's assumption (ReportRentalPaymentsBody).
      const payment = {
        amount_cents: command.amount_cents,
        paid_on: command.paid_on,
        ...(command.period === undefined ? {} : { period: command.period }),
      };
      try {
        return await partner.reportRentalPayments(
          command.enrollment_id,
          { rental_payments: [payment] },
          { requestId, lane: 'write' },
        );
      } finally {
        cache?.wrote(ENROLLMENTS, command.enrollment_id);
        await store?.wrote(ENROLLMENTS, command.enrollment_id);
      }
    },
  };
}

/**
 * The snapshot could not see payments (the platform kept them off the enrollment then); they show
 * now. The count before the first write is completed from rentbridge's own commands: one matching
 * payment, explained by no other landed or parked command → this one's (applied). Anything else
 * cannot be told.
 */
async function hiddenBaselineVerdict(
  command: RentalPaymentCommand,
  now: Record<string, unknown>,
  ledger: PaymentLedger | undefined,
  ctx: ReadContext,
): Promise<'applied' | 'unknown'> {
  const onRecord = countMatching(command, now);
  const others = onRecord === 1 && ledger ? await ledger.othersWithFacts(command) : null;
  if (onRecord === 1 && others === 0) return 'applied';
  ctx.missing?.(
    onRecord === 0
      ? `the snapshot could not see payments (no ${PAYMENTS} list then), and none with this amount, date and period is on the enrollment yet`
      : `the snapshot could not see payments (no ${PAYMENTS} list then): ${onRecord} payment(s) with this amount, date and period${others ? ` and ${others} other command(s) of rentbridge with them` : ''}, so which is this one cannot be told`,
  );
  return 'unknown';
}
