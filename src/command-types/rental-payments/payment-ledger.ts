import type { Db } from '../../db/prisma.js';
import type { RentalPaymentCommand } from '../../contracts/commands.js';

/**
 * What rentbridge's own guard rows say about payments on an enrollment: how many payment commands
 * with the same facts (amount, date, period) rentbridge holds as landed or possibly landed
 * (`applied`, `already_applied`, `unverified`). The payment read-back completes a baseline that
 * could not see payments with it (decision 045's rule, used by the guard since decision 047): a
 * payment on the enrollment that no other command of rentbridge explains is this command's.
 * A command being written (`pending`, `in_flight`, the one asking included) is not counted.
 */
export interface PaymentLedger {
  othersWithFacts(command: RentalPaymentCommand): Promise<number>;
}

export function createPaymentLedger(db: Db): PaymentLedger {
  return {
    async othersWithFacts(command) {
      const [row] = await db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM commands
         WHERE command_type = 'rental_payment'
           AND target_id = ${String(command.enrollment_id)}
           AND state IN ('applied', 'already_applied', 'unverified')
           AND payload->'amount_cents' = ${JSON.stringify(command.amount_cents)}::jsonb
           AND payload->>'paid_on' = ${command.paid_on}
           AND COALESCE(payload->'period', 'null'::jsonb) = ${JSON.stringify(command.period ?? null)}::jsonb`;
      return row?.n ?? 0;
    },
  };
}
