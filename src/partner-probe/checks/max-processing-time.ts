import { addGuardRow, type GuardCheck } from './check.js';

/**
 * MAX_PROCESSING_TIME: how long the decision and the payment (each made once, shared with their
 * own checks) took to show, against PARTNER_MAX_PROCESSING_MS. No row for a write not asked for.
 */
export const check: GuardCheck = async (ctx, assumption) => {
  const bound = ctx.bound;
  const decision = await ctx.decisionWrite();
  if (decision) {
    const ms = decision.visibleMs;
    addGuardRow(ctx, assumption, {
      step: 'decision within bound',
      result: ms === null ? 'could_not_tell' : ms <= bound ? 'holds' : 'does_not_hold',
      evidence: ms === null ? 'the decision never showed' : `visible after ${ms} ms; bound ${bound} ms`,
      request_ids: [],
    });
  }
  const payment = await ctx.paymentWrite();
  if (payment) {
    const ms = payment.visibleMs ?? payment.movedMs;
    addGuardRow(ctx, assumption, {
      step: 'payment within bound',
      result: ms === null ? 'could_not_tell' : ms <= bound ? 'holds' : 'does_not_hold',
      evidence: ms === null ? 'the payment never showed' : `visible after ${ms} ms; bound ${bound} ms`,
      request_ids: [],
    });
  }
  if (!decision && !payment) {
    addGuardRow(ctx, assumption, {
      step: 'writes within bound',
      result: 'could_not_tell',
      evidence: 'needs --write --application ID or --enrollment ID (a write to time)',
      request_ids: [],
    });
  }
};
