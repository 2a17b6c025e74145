import type { RentalPaymentCommand } from '../events/commands.js';
import type { GuardPartner } from './partner-port.js';
import type { SnapshotPageCache } from './snapshot-page-cache.js';
import { baseSnapshot, findRecord, sameTime, type ReadBackStrategy } from './read-back.js';

function matches(command: RentalPaymentCommand, payment: unknown): boolean {
  const p = (payment ?? {}) as Record<string, unknown>;
  return (
    p.amount_cents === command.amount_cents &&
    p.paid_on === command.paid_on &&
    (p.period ?? null) === (command.period ?? null)
  );
}

function countMatching(command: RentalPaymentCommand, record: Record<string, unknown> | null): number {
  const payments = record?.rental_payments;
  return Array.isArray(payments) ? payments.filter((p) => matches(command, p)).length : 0;
}

/**
 * Payments, by the snapshot rule (guard assumptions PAYMENT_VISIBLE_ON_ENROLLMENT and
 * REPORT_MOVES_UPDATED_AT, src/partner/assumptions.ts): the enrollment list has no date filter, so the enrollment is
 * found by paging. One more payment with this amount, date and period than the snapshot held →
 * applied; `updated_at` unchanged → not applied; anything else (changed, but not by a payment
 * we can recognise) → unknown.
 */
export function rentalPaymentReadBack(
  partner: GuardPartner,
  options: { snapshotCache?: SnapshotPageCache } = {},
): ReadBackStrategy<RentalPaymentCommand> {
  const cache = options.snapshotCache;
  return {
    async snapshot(command, ctx) {
      const record = await findRecord(partner, 'enrollments', command.enrollment_id, {}, ctx, cache);
      return {
        ...baseSnapshot(record),
        matching_payments: countMatching(command, record),
        payments_visible: record == null || Array.isArray(record.rental_payments),
      };
    },

    async verdict(command, snapshot, ctx) {
      const now = await findRecord(partner, 'enrollments', command.enrollment_id, {}, ctx);
      if (!now) {
        if (!snapshot.found) return 'not_applied';
        ctx.missing?.('the enrollment is no longer listed');
        return 'unknown';
      }
      // Guard assumption PAYMENT_VISIBLE_ON_ENROLLMENT: without the list of payments on the
      // record, "no new payment" is no evidence at all.
      if (!Array.isArray(now.rental_payments) || snapshot.payments_visible === false) {
        ctx.missing?.(
          'the enrollment record carries no rental_payments list, so a reported payment cannot be seen on it (assumption PAYMENT_VISIBLE_ON_ENROLLMENT)',
        );
        return 'unknown';
      }
      const before = typeof snapshot.matching_payments === 'number' ? snapshot.matching_payments : 0;
      if (countMatching(command, now) > before) return 'applied';
      if (now.updated_at == null || snapshot.updated_at == null) {
        ctx.missing?.('the enrollment record carries no updated_at (assumption REPORT_MOVES_UPDATED_AT)');
        return 'unknown';
      }
      if (snapshot.found && sameTime(String(now.updated_at), snapshot.updated_at)) return 'not_applied';
      return 'unknown';
    },

    async write(command, requestId) {
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
        cache?.wrote('enrollments', command.enrollment_id);
      }
    },
  };
}
