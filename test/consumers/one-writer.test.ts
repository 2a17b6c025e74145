import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { applicationDecisions } from '../../src/command-types/application-decisions/application-decisions.js';
import type { CommandConsumer } from '../../src/command-consumer/command-consumer.js';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import { FAST_GUARD, createHarness, uid, type Harness } from './support/harness.js';

const APPROVE = (id: number) => `/partner/v1/applications/${id}/approve`;
const REPORT = (id: number) => `/partner/v1/enrollments/${id}/report_rental_payments`;

/**
 * Two consumers handed the same command at once, as after a Kafka rebalance that moves a
 * partition while its first owner is mid-write. Here each consumer has its own group, so both
 * receive every message for sure. Their processing bound (how long a row found in_flight is
 * read back before "unchanged" may count) is shorter than the slow write: that must not be what
 * keeps the write single; the command's lock is.
 */
const RACING_GUARD = { ...FAST_GUARD, maxProcessingMs: 500 };

describe('two consumers on the same command', () => {
  let h: Harness;
  const running: CommandConsumer[] = [];

  beforeAll(async () => {
    h = await createHarness({ timeoutMs: 10_000 });
  });
  afterEach(async () => {
    for (const c of running.splice(0)) await c.stop();
    await h.control.clearFaults();
  });
  afterAll(async () => {
    await h?.close();
  });

  describe('when an approval is slow to be applied', () => {
    it('writes it once; the other waits and publishes the same applied outcome', async () => {
      await h.control.addFault({
        method: 'POST',
        path: '/partner/v1/applications/*/approve',
        kind: 'delay',
        delay_ms: 2500,
      });
      running.push(await h.startConsumer(applicationDecisions, { guard: RACING_GUARD }));
      running.push(await h.startConsumer(applicationDecisions, { guard: RACING_GUARD }));
      const [record] = await h.control.addRecords('applications', [{ status: 'submitted' }]);
      const app = Number(record!.id);
      const id = await h.decision({ decision_id: uid('race'), application_id: app, decision: 'approve' });

      const [first, second] = await h.outcomesOf(id, 2);
      expect(first).toMatchObject({ command_id: id, status: 'applied' });
      expect(second).toEqual(first);
      // One write sent, and it is the one the outcome names (usually attempt 1; attempt 2 if the
      // consumer that lost the race had created the row in_flight before the other took the lock).
      const writes = await h.writesTo(APPROVE(app));
      expect(writes.map((w) => [w.applied, w.request_id])).toEqual([
        [true, first!.partner_request_ids.at(-1)],
      ]);
      const { rows } = await h.database.sql.query<{ state: string }>(
        'SELECT state FROM commands WHERE command_id = $1',
        [id],
      );
      expect(rows).toEqual([{ state: 'applied' }]);
    });
  });

  describe('when a rental payment report is slow to be applied', () => {
    it('reports the payment once; the other waits and publishes the same applied outcome', async () => {
      await h.control.addFault({
        method: 'POST',
        path: '/partner/v1/enrollments/*/report_rental_payments',
        kind: 'delay',
        delay_ms: 2500,
      });
      running.push(await h.startConsumer(rentalPayments, { guard: RACING_GUARD }));
      running.push(await h.startConsumer(rentalPayments, { guard: RACING_GUARD }));
      const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
      const enrollment = Number(record!.id);
      const id = await h.payment({
        payment_id: uid('race-pay'),
        enrollment_id: enrollment,
        amount_cents: 125_000,
        paid_on: '2026-11-01',
        period: '2026-11',
      });

      const [first, second] = await h.outcomesOf(id, 2);
      expect(first).toMatchObject({ command_id: id, status: 'applied' });
      expect(second).toEqual(first);
      // A second report would add the payment twice: one write, and the enrollment holds it once.
      const writes = await h.writesTo(REPORT(enrollment));
      expect(writes.map((w) => [w.applied, w.request_id])).toEqual([
        [true, first!.partner_request_ids.at(-1)],
      ]);
      const stored = (await h.control.records('enrollments')).find((r) => r.id === enrollment);
      expect(stored?.rental_payments).toHaveLength(1);
    });
  });
});
