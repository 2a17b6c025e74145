import { describe, expect, it } from 'vitest';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import type { FaultInput } from '../../src/dev/sandbox/faults.js';
import { FAST_GUARD, TEST_MAX_PROCESSING_MS, headersOf, uid } from './support/harness.js';
import { useHarness } from '../support/app.js';

const REPORT = (id: number) => `/partner/v1/enrollments/${id}/report_rental_payments`;

describe('rental-payments consumer', () => {
  // The first read-back 50 ms after a failed call: a late write (client time-out 1.5 s) lands
  // well after it, so only the processing bound keeps the guard from writing again.
  const h = useHarness([rentalPayments], { guard: FAST_GUARD });

  async function newEnrollment(status = 'active'): Promise<number> {
    const [record] = await h.control.addRecords('enrollments', [{ status, rental_payments: [] }]);
    return Number(record!.id);
  }

  async function paymentsOf(enrollment: number): Promise<Array<Record<string, unknown>>> {
    const record = (await h.control.records('enrollments')).find((r) => r.id === enrollment);
    return (record?.rental_payments as Array<Record<string, unknown>> | undefined) ?? [];
  }

  /**
   * A payment to a new enrollment whose reports meet `faults` in turn, followed to its outcome;
   * then the writes the ledger holds for it.
   */
  async function payThrough(faults: Array<Omit<FaultInput, 'method' | 'path'>>) {
    const enrollment = await newEnrollment();
    for (const fault of faults)
      await h.control.addFault({ method: 'POST', path: REPORT(enrollment), ...fault });
    const id = await h.payment(payment(enrollment));
    const [outcome] = await h.outcomesOf(id);
    return { enrollment, id, outcome, writes: await h.writesTo(REPORT(enrollment)) };
  }

  const payment = (enrollment: number, overrides: Record<string, unknown> = {}) => ({
    payment_id: uid('pay'),
    enrollment_id: enrollment,
    amount_cents: 125_000,
    paid_on: '2026-11-01',
    period: '2026-11',
    ...overrides,
  });

  /**
   * The design's fault table (DESIGN.md, "The guarded write") for the report of a payment: the
   * Partner API's answer → the outcome, attempts, ledger writes, the enrollment's payments and,
   * when it does not succeed, the dead letter.
   */
  interface FaultRow {
    name: string;
    overrides?: Record<string, unknown>;
    faults: Array<Omit<FaultInput, 'method' | 'path'>>;
    outcome: { status: string; attempts: number; error?: Record<string, unknown> };
    /** Ledger writes to the report path, in order: [applied, HTTP status]. */
    ledger: Array<[boolean, number | null]>;
    /** The enrollment's payments afterwards. */
    payments: Array<Record<string, unknown>>;
    deadLetter?: Record<string, string>;
  }
  const FAULT_TABLE: FaultRow[] = [
    {
      name: '2xx: applied once',
      faults: [],
      outcome: { status: 'applied', attempts: 1 },
      ledger: [[true, 201]],
      payments: [{ amount_cents: 125_000, paid_on: '2026-11-01', period: '2026-11' }],
    },
    {
      name: '429: not applied; waits Retry-After and reports it once',
      faults: [{ kind: 'error', status: 429, code: 'rate_limited' }],
      outcome: { status: 'applied', attempts: 2 },
      ledger: [
        [false, 429],
        [true, 201],
      ],
      payments: [{}],
    },
    {
      name: '401: renews the token once and repeats the report',
      faults: [{ kind: 'error', status: 401, code: 'unauthenticated' }],
      outcome: { status: 'applied', attempts: 1 },
      ledger: [
        [false, 401],
        [true, 201],
      ],
      payments: [{}],
    },
    {
      name: '409 lock_failed: reads again and retries, bounded',
      faults: [{ kind: 'error', status: 409, code: 'lock_failed', times: 2 }],
      outcome: { status: 'applied', attempts: 3 },
      ledger: [
        [false, 409],
        [false, 409],
        [true, 201],
      ],
      payments: [{}],
    },
    {
      name: '402 (the card payment is declined): rejected with the processor error',
      overrides: { amount_cents: 402 },
      faults: [],
      outcome: { status: 'rejected', attempts: 1, error: { code: 'processor_card_error', status: 402 } },
      ledger: [[false, 402]],
      payments: [],
      deadLetter: { 'dlq-reason': 'rejected' },
    },
    {
      name: 'other 4xx (403 forbidden): rejected, no retry',
      faults: [{ kind: 'error', status: 403, code: 'forbidden' }],
      outcome: { status: 'rejected', attempts: 1, error: { code: 'forbidden', status: 403 } },
      ledger: [[false, 403]],
      payments: [],
      deadLetter: { 'dlq-reason': 'rejected', 'dlq-error-code': 'forbidden' },
    },
    {
      name: 'time-out, applied: reports it only once',
      faults: [{ kind: 'apply_then_timeout' }],
      outcome: { status: 'applied', attempts: 1 },
      ledger: [[true, null]],
      payments: [{}],
    },
    {
      name: '503 twice, not applied: proves it not applied, retries and reports it once',
      faults: [{ kind: 'error', status: 503, code: 'request_timeout', times: 2 }],
      outcome: { status: 'applied', attempts: 3 },
      ledger: [
        [false, 503],
        [false, 503],
        [true, 201],
      ],
      payments: [{}],
    },
    {
      name: '503 every time: exhausted after the bounded retries',
      faults: [{ kind: 'error', status: 503, code: 'request_timeout', times: null }],
      outcome: { status: 'exhausted', attempts: 6, error: { status: 503 } },
      ledger: Array.from({ length: 6 }, () => [false, 503] as [boolean, number]),
      payments: [],
      deadLetter: { 'dlq-reason': 'exhausted', 'dlq-attempts': '6' },
    },
  ];

  describe.each(FAULT_TABLE)('when the Partner API answers $name', (row) => {
    it('ends with the outcome, attempts, ledger writes and payments the design gives', async () => {
      const enrollment = await newEnrollment();
      for (const fault of row.faults) {
        await h.control.addFault({ method: 'POST', path: REPORT(enrollment), ...fault });
      }
      try {
        const id = await h.payment(payment(enrollment, row.overrides));
        const [outcome] = await h.outcomesOf(id);
        expect(outcome).toMatchObject({
          command_id: id,
          command_type: 'rental_payment',
          target_id: String(enrollment),
          ...row.outcome,
        });
        const writes = await h.writesTo(REPORT(enrollment));
        expect(writes.map((w) => [w.applied, w.status])).toEqual(row.ledger);
        expect(await paymentsOf(enrollment)).toMatchObject(row.payments);
        if (row.deadLetter) {
          const [letter] = await h.deadLettersOf(id);
          expect(headersOf(letter!.message.headers)).toMatchObject(row.deadLetter);
        }
      } finally {
        await h.control.clearFaults();
      }
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

  describe('when a report lands after the client has timed out, within the processing bound', () => {
    it('waits for the bound before concluding, finds the late payment and never reports it again', async () => {
      // The client gives up at 1.5 s; the sandbox applies the write at 2.5 s (its bound is 3 s).
      const { enrollment, outcome, writes } = await payThrough([{ kind: 'delay', delay_ms: 2500 }]);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 1 });
      expect(writes.map((w) => w.applied)).toEqual([true]);
      expect(await paymentsOf(enrollment)).toHaveLength(1);
    });
  });

  describe('when two reports in a row land late', () => {
    it('reports the payment once (the baseline is the snapshot before the first write)', async () => {
      // Attempt 1 is abandoned by the platform (past its bound: 503, not applied); attempt 2
      // lands late, after the client's time-out.
      const { enrollment, outcome, writes } = await payThrough([
        { kind: 'delay', delay_ms: 4000 },
        { kind: 'delay', delay_ms: 2000 },
      ]);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 2 });
      expect(writes.map((w) => [w.applied, w.status])).toEqual([
        [false, 503],
        [true, 201],
      ]);
      expect(await paymentsOf(enrollment)).toHaveLength(1);
    });
  });

  describe('when a report is delayed past the processing bound', () => {
    it('concludes not applied only after the bound, writes again and reports it once', async () => {
      const { enrollment, id, outcome, writes } = await payThrough([{ kind: 'delay', delay_ms: 5000 }]);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 2 });
      expect(writes.map((w) => [w.applied, w.status])).toEqual([
        [false, 503],
        [true, 201],
      ]);
      expect(await paymentsOf(enrollment)).toHaveLength(1);
      // The second write was sent only once the bound had passed since the first.
      const { rows } = await h.database.sql.query<{ kind: string; started_at: Date }>(
        "SELECT kind, started_at FROM command_attempts WHERE command_id = $1 AND kind = 'write' ORDER BY attempt",
        [id],
      );
      expect(rows[1]!.started_at.getTime() - rows[0]!.started_at.getTime()).toBeGreaterThanOrEqual(
        TEST_MAX_PROCESSING_MS,
      );
    });
  });

  describe('when the enrollment changes for another reason while the answer is a 500', () => {
    it('parks the payment as unverified, dead-letters it and never writes again', async () => {
      const enrollment = await newEnrollment();
      await h.control.addFault({ method: 'POST', path: REPORT(enrollment), kind: 'error', status: 500 });
      const id = await h.payment(payment(enrollment));
      // Wait for the failed write, then change the enrollment before the guard reads it back.
      await expect
        .poll(async () => (await h.writesTo(REPORT(enrollment))).length, { timeout: 5000, interval: 50 })
        .toBeGreaterThan(0);
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

  describe('when the platform keeps payments off the enrollment record and leaves updated_at alone', () => {
    it('never reads "not applied" from missing evidence: parks the payment, saying what was missing', async () => {
      const enrollment = await newEnrollment();
      await h.control.setConfig({ enrollment_payments_visible: false, report_moves_updated_at: false });
      try {
        await h.control.addFault({
          method: 'POST',
          path: REPORT(enrollment),
          kind: 'apply_then_error',
          status: 500,
        });
        const id = await h.payment(payment(enrollment));
        const [outcome] = await h.outcomesOf(id);
        expect(outcome).toMatchObject({ status: 'unverified', attempts: 1, error: { status: 500 } });
        expect(outcome!.error!.message).toMatch(/no rental_payments list/);
        const [letter] = await h.deadLettersOf(id);
        expect(headersOf(letter!.message.headers)).toMatchObject({ 'dlq-reason': 'unverified' });
        // The one write landed; it was never sent again.
        expect((await h.writesTo(REPORT(enrollment))).map((w) => w.applied)).toEqual([true]);
      } finally {
        await h.control.setConfig({ enrollment_payments_visible: true, report_moves_updated_at: true });
      }
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
