import { z } from 'zod';

/**
 * The outcome of every command, published on outcomes.application-decisions /
 * outcomes.rental-payments / outcomes.customer-registrations / outcomes.enrollments as the `data` of a CloudEvent keyed by the target record's id. A
 * redelivered or redriven command that is already final publishes the same outcome again (same
 * CloudEvent id), so back-office consumers can de-duplicate on it.
 */

export const COMMAND_KINDS = [
  'application_decision',
  'rental_payment',
  'customer_registration',
  'enrollment',
] as const;
export type CommandKind = (typeof COMMAND_KINDS)[number];

export const OUTCOME_STATUSES = [
  'applied',
  'already_applied',
  'rejected',
  'exhausted',
  'unverified',
] as const;
export type OutcomeStatus = (typeof OUTCOME_STATUSES)[number];

export const commandOutcomeSchema = z
  .object({
    command_id: z
      .string()
      .min(1)
      .describe('decision_id, payment_id, registration_id or enrollment_request_id'),
    command_type: z.enum(COMMAND_KINDS),
    target_id: z
      .string()
      .min(1)
      .describe(
        'application_id, enrollment_id, the lower-cased e-mail (registration) or customer_id (enrollment)',
      ),
    status: z
      .enum(OUTCOME_STATUSES)
      .describe(
        'applied / already_applied: the effect is in place; rejected: the partner refused it; ' +
          'exhausted: retries ran out, proven not applied; unverified: could not tell, parked for ops',
      ),
    attempts: z.number().int().nonnegative().describe('writes sent to the Partner API'),
    partner_request_ids: z.array(z.string()).describe('X-Request-Id of every write, in order'),
    error: z
      .object({ code: z.string().nullable(), status: z.number().int().nullable(), message: z.string() })
      .optional()
      .describe('the last failure, when the command did not succeed'),
    // Onboarding commands (customer_registration, enrollment): the ids the PMS maps its tenant to.
    pms_reference: z.string().optional().describe("the PMS's own id of the tenant, as the command gave it"),
    partner_customer_id: z
      .string()
      .optional()
      .describe('registration: the customer created; enrollment: the customer enrolled'),
    existing_customer_id: z
      .string()
      .optional()
      .describe('registration rejected because the e-mail was already taken: that customer'),
    check_details: z
      .record(z.string(), z.string())
      .optional()
      .describe('registration rejected by POST /customers/check: field → reason, as the API gave them'),
    partner_enrollment_id: z.string().optional().describe('enrollment: the enrollment created'),
    existing_enrollment_id: z
      .string()
      .optional()
      .describe('enrollment rejected because the customer already holds an active one: that enrollment'),
    enrollment_request_id: z
      .string()
      .optional()
      .describe('registration with enroll: the enrollment command it led to (its own outcome follows)'),
  })
  .strict();
export type CommandOutcome = z.infer<typeof commandOutcomeSchema>;

/** CloudEvent types of outcomes. */
export const OUTCOME_TYPES = {
  application_decision: 'rentbridge.outcome.application-decision',
  rental_payment: 'rentbridge.outcome.rental-payment',
  customer_registration: 'rentbridge.outcome.customer-registration',
  enrollment: 'rentbridge.outcome.enrollment',
} as const satisfies Record<CommandKind, string>;

export function isSuccess(status: OutcomeStatus): boolean {
  return status === 'applied' || status === 'already_applied';
}
