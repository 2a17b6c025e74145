import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rentalPayments } from '../../consumers/rental-payments.js';
import { FAST_GUARD, createHarness, headersOf, uid, type Harness } from './support/harness.js';

const REPORT = (id: number) => `/partner/v1/enrollments/${id}/report_rental_payments`;

describe('rental-payments consumer', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await createHarness();
    // A longer pause before reading back, so a test can change the enrollment in between.
    await h.startConsumer(rentalPayments, { guard: { ...FAST_GUARD, readBackDelayMs: 1500 } });
  });
  afterAll(async () => {
    await h?.close();
  });

  async function newEnrollment(status = 'active'): Promise<number> {
    const [record] = await h.control.addRecords('enrollments', [{ status, rental_payments: [] }]);
    return Number(record!.id);
  }

  async function paymentsOf(enrollment: number): Promise<Array<Record<string, unknown>>> {
    const record = (await h.control.records('enrollments')).find((r) => r.id === enrollment);
    return (record?.rental_payments as Array<Record<string, unknown>> | undefined) ?? [];
  }

  const payment = (enrollment: number, overrides: Record<string, unknown> = {}) => ({
    payment_id: uid('pay'),
    enrollment_id: enrollment,
    amount_cents: 125_000,
    paid_on: '2026-11-01',
    period: '2026-11',
    ...overrides,
  });

  describe('when the report succeeds', () => {
    it('adds the payment to the enrollment once and publishes an applied outcome', async () => {
      const enrollment = await newEnrollment();
      const id = await h.payment(payment(enrollment));
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({
        command_type: 'rental_payment',
        target_id: String(enrollment),
        status: 'applied',
        attempts: 1,
      });
      expect(await paymentsOf(enrollment)).toMatchObject([
        { amount_cents: 125_000, paid_on: '2026-11-01', period: '2026-11' },
      ]);
    });
  });

  describe('when the report is applied but answered with a 500', () => {
    it('finds the new payment by the snapshot rule and reports it only once', async () => {
      const enrollment = await newEnrollment();
      // The same payment already reported in an earlier month must not fool the read-back.
      await h.outcomesOf(await h.payment(payment(enrollment, { payment_id: uid('earlier') })));
      await h.control.addFault({
        method: 'POST',
        path: REPORT(enrollment),
        kind: 'apply_then_error',
        status: 500,
      });
      const id = await h.payment(payment(enrollment));
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 1 });
      expect(await paymentsOf(enrollment)).toHaveLength(2);
    });
  });

  describe('when the report is applied but never answered', () => {
    it('reports it only once', async () => {
      const enrollment = await newEnrollment();
      await h.control.addFault({ method: 'POST', path: REPORT(enrollment), kind: 'apply_then_timeout' });
      const id = await h.payment(payment(enrollment));
      expect((await h.outcomesOf(id))[0]).toMatchObject({ status: 'applied', attempts: 1 });
      expect(await paymentsOf(enrollment)).toHaveLength(1);
    });
  });

  describe('when the report fails with a 503 and was not applied', () => {
    it('proves it not applied, retries and reports it once', async () => {
      const enrollment = await newEnrollment();
      await h.control.addFault({
        method: 'POST',
        path: REPORT(enrollment),
        kind: 'error',
        status: 503,
        code: 'request_timeout',
        times: 2,
      });
      const id = await h.payment(payment(enrollment));
      expect((await h.outcomesOf(id))[0]).toMatchObject({ status: 'applied', attempts: 3 });
      expect(await paymentsOf(enrollment)).toHaveLength(1);
    });
  });

  describe('when the enrollment changes for another reason while the answer is a 500', () => {
    it('parks the payment as unverified, dead-letters it and never writes again', async () => {
      const enrollment = await newEnrollment();
      await h.control.addFault({ method: 'POST', path: REPORT(enrollment), kind: 'error', status: 500 });
      const id = await h.payment(payment(enrollment));
      // Wait for the failed write, then change the enrollment before the guard reads it back.
      for (let i = 0; i < 100 && (await h.writesTo(REPORT(enrollment))).length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      await h.control.patchRecord('enrollments', enrollment, { nickname: 'changed' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ status: 'unverified', attempts: 1, error: { status: 500 } });
      const [letter] = await h.deadLettersOf(id);
      expect(headersOf(letter!.message.headers)).toMatchObject({
        'dlq-reason': 'unverified',
        'dlq-error-status': '500',
      });
      expect(await h.writesTo(REPORT(enrollment))).toHaveLength(1);
      expect(await paymentsOf(enrollment)).toHaveLength(0);
    });
  });

  describe('when the card payment is declined', () => {
    it('rejects it with the processor error and dead-letters it', async () => {
      const enrollment = await newEnrollment();
      const id = await h.payment(payment(enrollment, { amount_cents: 402 }));
      expect((await h.outcomesOf(id))[0]).toMatchObject({
        status: 'rejected',
        error: { code: 'processor_card_error', status: 402 },
      });
      expect(headersOf((await h.deadLettersOf(id))[0]!.message.headers)['dlq-reason']).toBe('rejected');
    });
  });

  describe('when several payments target one enrollment', () => {
    it('reports them in the order they were published', async () => {
      const enrollment = await newEnrollment();
      const ids: string[] = [];
      for (const amount of [101, 202, 303, 404_00]) {
        ids.push(await h.payment(payment(enrollment, { amount_cents: amount })));
      }
      for (const id of ids) await h.outcomesOf(id);
      expect((await paymentsOf(enrollment)).map((p) => p.amount_cents)).toEqual([101, 202, 303, 404_00]);
    });
  });
});
