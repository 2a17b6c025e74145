import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandType } from '../../src/command-types/command-type.js';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import type { RentalPaymentCommand } from '../../src/contracts/commands.js';
import { createHarness, headersOf, uid, type Harness } from './support/harness.js';

/**
 * Issue 26 item 3: the consumer tries a command again only on a failure the retry policy calls
 * retriable (isRetriable, src/errors.ts). A bug is not hidden in a retry loop: it leaves
 * the message handler uncommitted, kafkajs stops the consumer (it never restarts on a TypeError),
 * and the consumer's health says so, as /readyz shows it (decision 021). Nothing is lost: the next
 * start of the consumer (a process restart, once the code is fixed) takes the same message.
 */

const REPORT = (id: number) => `/partner/v1/enrollments/${id}/report_rental_payments`;

describe('a command consumer whose code has a bug', () => {
  let h: Harness;
  let broken = true;
  let calls = 0;
  // The rental-payment row with a step after the write that throws while `broken`.
  const buggy: CommandType<RentalPaymentCommand> = {
    ...rentalPayments,
    complete: async () => {
      calls += 1;
      if (broken) throw new TypeError("Cannot read properties of undefined (reading 'id')");
      return {};
    },
  };

  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  describe('when a step throws a TypeError', () => {
    it('stops the consumer instead of retrying, publishes nothing, and applies the payment once after a restart', async () => {
      const groupId = `rentbridge.bugs.${uid('g')}`;
      const first = await h.startConsumer(buggy, { groupId });
      const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
      const enrollment = Number(record!.id);
      const id = await h.payment({
        payment_id: uid('bug'),
        enrollment_id: enrollment,
        amount_cents: 1200,
        paid_on: '2026-11-02',
      });
      const deadline = Date.now() + 60_000;
      while (first.health.check() === true || !String(first.health.check()).includes('will not restart')) {
        if (Date.now() > deadline)
          throw new Error(`the consumer did not stop: ${String(first.health.check())}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(first.health.check()).toContain("Cannot read properties of undefined (reading 'id')");
      // Tried once, not in a loop; nothing published: no outcome, no dead letter.
      expect(calls).toBe(1);
      expect(h.received.all.filter((r) => headersOf(r.message.headers)['command-id'] === id)).toEqual([]);

      // The fix is deployed: a new consumer of the same group takes the uncommitted message.
      broken = false;
      await first.stop();
      await h.startConsumer(buggy, { groupId });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ command_id: id, status: 'applied', attempts: 1 });
      // The write was sent once: the second run found the row final.
      expect((await h.writesTo(REPORT(enrollment))).filter((w) => w.applied)).toHaveLength(1);
    });
  });
});
