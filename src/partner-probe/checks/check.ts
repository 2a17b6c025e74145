import type { GuardAssumption } from '../../partner/assumptions.js';
import type { ProbeContext } from '../probe-context.js';
import type { ProbeRow } from '../probe-types.js';

/** The probe's check of one guard assumption: adds its rows (src/partner-probe/checks/<id>.ts). */
export type GuardCheck = (ctx: ProbeContext, assumption: GuardAssumption) => Promise<void>;

/** A row about the assumption: its id and statement, so the row and the assumption cannot drift. */
export function addGuardRow(
  ctx: ProbeContext,
  assumption: GuardAssumption,
  row: Pick<ProbeRow, 'step' | 'result' | 'evidence' | 'request_ids'>,
): void {
  ctx.add({ ...row, guard_assumption: assumption.id, assumption: assumption.statement });
}

/** The row of a check that needs a payment report, on a run without `--write --enrollment`. */
export function needsPaymentWrite(ctx: ProbeContext, assumption: GuardAssumption, step: string): void {
  addGuardRow(ctx, assumption, {
    step,
    result: 'could_not_tell',
    evidence: 'needs --write --enrollment ID (a sandbox enrollment it may report a payment to)',
    request_ids: [],
  });
}
