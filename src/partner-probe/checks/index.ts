import type { GuardAssumptionId } from '../../partner/assumptions.js';
import type { GuardCheck } from './check.js';
import { check as customersNewestFirst } from './customers-newest-first.js';
import { check as dateFilters } from './date-filters.js';
import { check as decisionVisibleOnApplication } from './decision-visible-on-application.js';
import { check as maxProcessingTime } from './max-processing-time.js';
import { check as paymentVisibleOnEnrollment } from './payment-visible-on-enrollment.js';
import { check as reportMovesUpdatedAt } from './report-moves-updated-at.js';

export type { GuardCheck } from './check.js';

/**
 * The probe's check of each guard assumption (src/partner/assumptions.ts, GUARD_ASSUMPTIONS), one
 * file each. Typed by every id, so an assumption added without a check does not compile.
 */
export const GUARD_CHECKS: Readonly<Record<GuardAssumptionId, GuardCheck>> = {
  max_processing_time: maxProcessingTime,
  payment_visible_on_enrollment: paymentVisibleOnEnrollment,
  report_moves_updated_at: reportMovesUpdatedAt,
  decision_visible_on_application: decisionVisibleOnApplication,
  date_filters: dateFilters,
  customers_newest_first: customersNewestFirst,
};

/** The check of an assumption; an assumption without one is a bug, said at once. */
export function checkOf(id: string, checks: Readonly<Record<string, GuardCheck>> = GUARD_CHECKS): GuardCheck {
  const check = Object.hasOwn(checks, id) ? checks[id] : undefined;
  if (!check) throw new Error(`guard assumption ${id} has no probe check (src/partner-probe/checks/)`);
  return check;
}
