import { z } from 'zod';
import { idString, idStringOrNumber } from './ids.js';

/**
 * The commands rentbridge applies to the Partner API. Each carries its own unique id, which is
 * the guard's key: the same id is never applied twice. They travel as the `data` of a CloudEvent
 * on commands.application-decisions / commands.rental-payments, keyed by the target record's id.
 */

/** Ids follow one pattern (src/events/ids.ts): 1-128 of A-Z a-z 0-9 _ . -, never "." or "..". */
const id = idStringOrNumber;

export const applicationDecisionCommandSchema = z
  .object({
    decision_id: idString.describe('unique id of this decision; the guard key'),
    application_id: id.describe('the application to decide'),
    decision: z.enum(['approve', 'decline']),
    reason: z.string().max(2000).optional(),
  })
  .strict();
export type ApplicationDecisionCommand = z.infer<typeof applicationDecisionCommandSchema>;

export const rentalPaymentCommandSchema = z
  .object({
    payment_id: idString.describe('unique id of this payment; the guard key'),
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
