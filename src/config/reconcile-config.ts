import { z } from 'zod';

/**
 * The configuration of reconciliation (issue 45, docs/reconciliation.md), spread into
 * src/config/config.ts's schema.
 */
export const reconcileSettings = {
  /**
   * Seconds between scheduled reconciliation passes, run by the poller role (`poller`, `start`),
   * one at a time across processes. 0 turns the schedule off (`rentbridge reconcile` still works).
   * Default 86400 (daily).
   */
  RECONCILE_INTERVAL: z.coerce.number().int().min(0).default(86_400),
  /**
   * Redrive a parked command that reconciliation finds absent long after the processing bound
   * (`settled_absent`): its guard row goes back to `pending` and its dead letter is redriven, so the
   * consumer writes it once more. Default false: the item only says it is safe to redrive.
   */
  RECONCILE_REDRIVE_ABSENT: z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .transform((v) => v === 'true' || v === '1' || v === 'yes')
    .default(false),
};
