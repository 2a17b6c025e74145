import { z } from 'zod';

/**
 * The commands rentbridge applies to the Partner API. Each carries its own unique id, which is
 * the guard's key: the same id is never applied twice. They travel as the `data` of a CloudEvent
 * on commands.application-decisions / commands.rental-payments, keyed by the target record's id.
 */

const id = z.union([z.string().min(1).max(200), z.number().int().nonnegative()]).transform(String);

export const applicationDecisionCommandSchema = z
  .object({
    decision_id: z.string().min(1).max(200).describe('unique id of this decision; the guard key'),
    application_id: id.describe('the application to decide'),
    decision: z.enum(['approve', 'decline']),
    reason: z.string().max(2000).optional(),
  })
  .strict();
export type ApplicationDecisionCommand = z.infer<typeof applicationDecisionCommandSchema>;

export const rentalPaymentCommandSchema = z
  .object({
    payment_id: z.string().min(1).max(200).describe('unique id of this payment; the guard key'),
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

/** CloudEvent types of commands. */
export const COMMAND_TYPES = {
  applicationDecision: 'rentbridge.command.application-decision',
  rentalPayment: 'rentbridge.command.rental-payment',
} as const;
