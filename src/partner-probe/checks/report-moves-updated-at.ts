import { REPORT_MOVES_UPDATED_AT } from '../../partner/assumptions.js';
import { addGuardRow, needsPaymentWrite, type GuardCheck } from './check.js';

const UPDATED_AT = REPORT_MOVES_UPDATED_AT.field;

/** REPORT_MOVES_UPDATED_AT: the payment report's enrollment, its updated_at before and after. */
export const check: GuardCheck = async (ctx, assumption) => {
  const step = 'report moves updated_at';
  const seen = await ctx.paymentWrite();
  if (!seen) return needsPaymentWrite(ctx, assumption, step);
  const { before, after, movedMs } = seen;
  addGuardRow(ctx, assumption, {
    step,
    result: seen.writeError ? 'could_not_tell' : movedMs !== null ? 'holds' : 'does_not_hold',
    evidence: seen.writeError
      ? 'the report was not accepted'
      : movedMs !== null
        ? `${UPDATED_AT} moved from ${String(before?.[UPDATED_AT])} to ${String(after?.[UPDATED_AT])} after ${movedMs} ms`
        : `${UPDATED_AT} still ${String(after?.[UPDATED_AT] ?? before?.[UPDATED_AT])} after ${ctx.waitLimit} ms`,
    request_ids: [],
  });
};
