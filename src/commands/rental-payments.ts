import { COMMAND_TYPES, rentalPaymentCommandSchema, type RentalPaymentCommand } from '../events/commands.js';
import { OUTCOME_TYPES } from '../events/outcomes.js';
import { PMS_EVENT_TYPES } from '../events/pms-events.js';
import { rentalPaymentReadBack } from '../guard/index.js';
import { TOPICS } from '../kafka/topics.js';
import type { CommandType } from './command-type.js';

/** Reports rental payments to enrollments (`POST /enrollments/{id}/report_rental_payments`). */
export const rentalPayments: CommandType<RentalPaymentCommand> = {
  name: 'rental-payments',
  kind: 'rental_payment',
  pmsEventType: PMS_EVENT_TYPES.rentPaymentReceived,
  topic: TOPICS.rentalPayments,
  outcomeTopic: TOPICS.rentalPaymentOutcomes,
  eventType: COMMAND_TYPES.rentalPayment,
  outcomeType: OUTCOME_TYPES.rental_payment,
  schema: rentalPaymentCommandSchema,
  idField: 'payment_id',
  target: { field: 'enrollment_id' },
  readBack: rentalPaymentReadBack,
};
