import { z } from 'zod';
import { idStringOrNumber, pmsIdString } from './ids.js';

/**
 * The commands rentbridge applies to the Partner API. Each carries its own id; a command is known
 * by its identity, source + command type + command id (src/contracts/command-contracts.ts), which
 * is the guard's key: the same identity is never applied twice. They travel as the `data` of a CloudEvent
 * on commands.application-decisions / commands.rental-payments / commands.customer-registrations /
 * commands.enrollments, keyed by the target record's id (a registration: its lower-cased e-mail).
 */

/**
 * Two kinds of ids (src/contracts/ids.ts): those that go into a Partner API path (application,
 * enrollment, customer) follow the strict pattern, 1-128 of A-Z a-z 0-9 _ . -, never "." or "..";
 * the PMS's own (command ids, pms_reference) are any text of 1-255 characters without controls.
 */
const id = idStringOrNumber;

export const applicationDecisionCommandSchema = z
  .object({
    decision_id: pmsIdString.describe('id of this decision, unique per source; with them the guard key'),
    application_id: id.describe('the application to decide'),
    decision: z.enum(['approve', 'decline']),
    reason: z.string().max(2000).optional(),
  })
  .strict();
export type ApplicationDecisionCommand = z.infer<typeof applicationDecisionCommandSchema>;

export const rentalPaymentCommandSchema = z
  .object({
    payment_id: pmsIdString.describe('id of this payment, unique per source; with them the guard key'),
    enrollment_id: id.describe('the enrollment the payment is reported for'),
    amount_cents: z.number().int().positive(),
    paid_on: z.iso.date().describe('YYYY-MM-DD'),
    period: z
      .string()
      .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'YYYY-MM')
      .optional(),
  })
  .strict();
export type RentalPaymentCommand = z.infer<typeof rentalPaymentCommandSchema>;

export const customerRegistrationCommandSchema = z
  .object({
    registration_id: pmsIdString
      .refine(
        (v) => [...v].length <= 244,
        'at most 244 characters (its enrollment request id adds ".enrollment")',
      )
      .describe('id of this registration, unique per source; with them the guard key'),
    pms_reference: pmsIdString.describe(
      "the PMS's own id of the tenant; echoed in the outcome next to the Partner customer id",
    ),
    first_name: z.string().min(1).max(200),
    last_name: z.string().min(1).max(200),
    email: z.email().max(320).describe('unique per customer (spec 2.2); the read-back matches on it'),
    phone: z.string().regex(/^\d{1,20}$/, 'a string of digits'),
    check: z
      .boolean()
      .optional()
      .describe('run POST /partner/v1/customers/check first; a failure rejects with its details'),
    enroll: z
      .boolean()
      .optional()
      .describe('once created, enroll the customer (a command on commands.enrollments)'),
  })
  .strict();
export type CustomerRegistrationCommand = z.infer<typeof customerRegistrationCommandSchema>;

export const enrollmentCommandSchema = z
  .object({
    enrollment_request_id: pmsIdString.describe(
      'id of this enrollment request, unique per source; with them the guard key',
    ),
    customer_id: id.describe('the Partner customer to enroll'),
    pms_reference: pmsIdString.optional().describe("the PMS's own id of the tenant"),
    registration_id: pmsIdString
      .optional()
      .describe('set when the enrollment is the last step of a registration'),
  })
  .strict();
export type EnrollmentCommand = z.infer<typeof enrollmentCommandSchema>;

/** The enrollment request a registration with `enroll: true` leads to: one id per registration. */
export function enrollmentRequestIdOf(registrationId: string): string {
  return `${registrationId}.enrollment`;
}

/**
 * The Kafka key (and guard target) of a registration: the e-mail, lower-cased. The customer has
 * no id yet, and the e-mail is what the Partner API keeps unique, so two registrations of one
 * e-mail run in order on one partition.
 */
export function registrationKey(command: Pick<CustomerRegistrationCommand, 'email'>): string {
  return command.email.toLowerCase();
}
