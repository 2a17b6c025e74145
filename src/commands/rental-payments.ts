import type { RentalPaymentCommand } from '../events/commands.js';
import { RENTAL_PAYMENT } from '../events/command-contracts.js';
import { rentalPaymentReadBack } from '../guard/index.js';
import type { CommandType } from './command-type.js';

/** Reports rental payments to enrollments (`POST /enrollments/{id}/report_rental_payments`). */
export const rentalPayments: CommandType<RentalPaymentCommand> = {
  ...RENTAL_PAYMENT,
  readBack: rentalPaymentReadBack,
};
