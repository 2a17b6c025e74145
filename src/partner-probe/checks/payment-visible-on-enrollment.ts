import { PAYMENT_VISIBLE_ON_ENROLLMENT } from '../../partner/assumptions.js';
import { addGuardRow, needsPaymentWrite, type GuardCheck } from './check.js';

const PAYMENTS = PAYMENT_VISIBLE_ON_ENROLLMENT.field;

/**
 * PAYMENT_VISIBLE_ON_ENROLLMENT, with `--write --enrollment`: one payment report, read back by
 * the guard's own rule (rentalPaymentReadBack) until it shows or twice the bound has passed. A
 * record without the payments list does not hold even when the report was refused.
 */
export const check: GuardCheck = async (ctx, assumption) => {
  const step = 'payment visible';
  const seen = await ctx.paymentWrite();
  if (!seen) return needsPaymentWrite(ctx, assumption, step);
  const { writeError, visibleMs, hasList } = seen;
  addGuardRow(ctx, assumption, {
    step,
    result: writeError
      ? hasList
        ? 'could_not_tell'
        : 'does_not_hold'
      : visibleMs !== null
        ? 'holds'
        : 'does_not_hold',
    evidence: writeError
      ? `the report was not accepted: ${writeError}${hasList ? '' : `; the enrollment record has no ${PAYMENTS}`}`
      : visibleMs !== null
        ? `the payment showed in ${PAYMENTS} after ${visibleMs} ms`
        : hasList
          ? `no matching payment in ${PAYMENTS} within ${ctx.waitLimit} ms`
          : `the enrollment record has no ${PAYMENTS} (fields: ${Object.keys(seen.after ?? seen.before ?? {}).join(', ')})`,
    request_ids: seen.request_ids,
  });
};
