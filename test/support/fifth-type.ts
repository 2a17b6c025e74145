import { z } from 'zod';
import { registerCommandContract, type CommandContract } from '../../src/contracts/command-contracts.js';
import { pmsIdString } from '../../src/contracts/ids.js';

/**
 * A fifth command type, as an extension would add one: this entry in the list of command types
 * (and, for the consumer, its behaviour: test/command-types/fifth-type.test.ts). Imported FIRST by
 * the test that uses it, so it is registered before any list derived from the list is made.
 */
export const backdatedPaymentSchema = z
  .object({
    backdated_id: pmsIdString.describe('id of this back-dated payment, unique per source'),
    enrollment_id: z.union([z.string(), z.number()]).describe('the enrollment it is reported for'),
    amount_cents: z.number().int().positive(),
    paid_on: z.iso.date(),
    period: z.string().optional(),
  })
  .strict();
export type BackdatedPayment = z.infer<typeof backdatedPaymentSchema>;

export const BACKDATED_PAYMENT = {
  kind: 'backdated_payment',
  name: 'backdated-payments',
  pmsEventType: 'rent_payment.backdated',
  topic: 'commands.backdated-payments',
  outcomeTopic: 'outcomes.backdated-payments',
  eventType: 'rentbridge.command.backdated-payment',
  outcomeType: 'rentbridge.outcome.backdated-payment',
  schema: backdatedPaymentSchema,
  idField: 'backdated_id',
  target: { field: 'enrollment_id' },
} satisfies CommandContract<BackdatedPayment>;

registerCommandContract(BACKDATED_PAYMENT);
