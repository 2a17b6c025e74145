import { COMMAND_TYPES, rentalPaymentCommandSchema, type RentalPaymentCommand } from '../events/commands.js';
import { rentalPaymentReadBack } from '../guard/index.js';
import { TOPICS } from '../kafka/topics.js';
import { createCommandConsumer, type CommandConsumerDeps, type CommandSpec } from './command-runner.js';

/** Reports rental payments to enrollments from commands.rental-payments. */
export const rentalPayments: CommandSpec<RentalPaymentCommand> = {
  name: 'rental-payments',
  kind: 'rental_payment',
  topic: TOPICS.rentalPayments,
  outcomeTopic: TOPICS.rentalPaymentOutcomes,
  eventType: COMMAND_TYPES.rentalPayment,
  schema: rentalPaymentCommandSchema,
  commandId: (c) => c.payment_id,
  targetId: (c) => c.enrollment_id,
  readBack: rentalPaymentReadBack,
};

export function createRentalPaymentsConsumer(deps: CommandConsumerDeps) {
  return createCommandConsumer(rentalPayments, deps);
}
