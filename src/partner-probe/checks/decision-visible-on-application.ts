import { addGuardRow, type GuardCheck } from './check.js';

/**
 * DECISION_VISIBLE_ON_APPLICATION, with `--write --application`: one decision, read back by the
 * guard's own rule (applicationDecisionReadBack) until it shows or twice the bound has passed.
 */
export const check: GuardCheck = async (ctx, assumption) => {
  const step = 'decision visible';
  const seen = await ctx.decisionWrite();
  if (!seen) {
    addGuardRow(ctx, assumption, {
      step,
      result: 'could_not_tell',
      evidence: 'needs --write --application ID (a sandbox application it may decide)',
      request_ids: [],
    });
    return;
  }
  addGuardRow(ctx, assumption, {
    step,
    result: seen.writeError ? 'could_not_tell' : seen.visibleMs !== null ? 'holds' : 'does_not_hold',
    evidence: seen.writeError
      ? `the decision was not accepted: ${seen.writeError}`
      : seen.visibleMs !== null
        ? `the read-back saw the ${seen.decision} after ${seen.visibleMs} ms (status was ${String(seen.snapshotStatus)})`
        : `not visible by the guard's rule within ${ctx.waitLimit} ms (last verdict ${seen.lastVerdict}${seen.missing ? `: ${seen.missing}` : ''})`,
    request_ids: seen.request_ids,
  });
};
