import type { RentalPaymentCommand } from '../../contracts/commands.js';
import { RENTAL_PAYMENT } from '../../contracts/command-contracts.js';
import { rentalPaymentReadBack } from './rental-payment-read-back.js';
import type { CommandType } from '../command-type.js';

/** Reports rental payments to enrollments (`POST /enrollments/{id}/report_rental_payments`). */
export const rentalPayments: CommandType<RentalPaymentCommand> = {
  ...RENTAL_PAYMENT,
  readBack: rentalPaymentReadBack,
};
