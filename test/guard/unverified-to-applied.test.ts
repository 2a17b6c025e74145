import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import { redriveDeadLetter } from '../../src/dead-letters/redrive.js';
import { outcomeEventId } from '../../src/contracts/outcomes.js';
import {
  FAST_GUARD,
  headersOf,
  logger,
  outcomeOf,
  uid,
  type Harness,
  type Received,
} from '../consumers/support/harness.js';
import { useApp } from '../support/app.js';
import { cloudEventOf } from '../support/contracts.js';

const REPORT = (id: number) => `/partner/v1/enrollments/${id}/report_rental_payments`;

/**
 * Issue 41 / decision 047, end to end (sandbox faults, real Kafka and PostgreSQL): a payment
 * whose write timed out while the platform kept payments off the enrollment is parked
 * `unverified`; once the payments show, a redrive ends it `applied` without writing again, under
 * a new outcome id. Its snapshot (taken while payments were hidden) is kept; rentbridge's own
 * rows complete it. When another command of rentbridge could explain the payment, it stays
 * `unverified`.
 */
describe('a payment parked unverified while payments were hidden, redriven once they show', () => {
  const app = useApp({
    harness: true,
    consumers: [rentalPayments],
    consumerOverrides: { guard: FAST_GUARD },
    deadLetterIndexer: true,
  });
  let h: Harness;

  beforeAll(() => {
    h = app.harness;
  });

  afterEach(async () => {
    await h.control.clearFaults();
    await h.control.setConfig({ enrollment_payments_visible: true, report_moves_updated_at: true });
  });

  const outcomesOn = (commandId: string) => (r: Received) =>
    r.topic.startsWith('outcomes.') && headersOf(r.message.headers)['command-id'] === commandId;

  /** A payment whose write lands but times out while the platform hides payments: parked unverified. */
  async function parkedPayment(enrollment: number, facts: { amount_cents: number; paid_on: string }) {
    await h.control.setConfig({ enrollment_payments_visible: false, report_moves_updated_at: false });
    await h.control.addFault({ method: 'POST', path: REPORT(enrollment), kind: 'apply_then_timeout' });
    const id = await h.payment({
      payment_id: uid('pay'),
      enrollment_id: enrollment,
      period: '2026-11',
      ...facts,
    });
    const [parked] = await h.received.waitFor(outcomesOn(id));
    expect(outcomeOf(parked!).status).toBe('unverified');
    const letterId = await vi.waitFor(
      async () => {
        const letter = await h.database.db.deadLetter.findFirst({ where: { commandId: id } });
        expect(letter).not.toBeNull();
        return Number(letter!.id);
      },
      { timeout: 30_000, interval: 200 },
    );
    return { id, parked: parked!, letterId };
  }

  const redrive = (letterId: number) =>
    redriveDeadLetter(
      { db: h.database.db, producer: h.producer, topicPrefix: h.kafka.prefix, logger },
      letterId,
      { actor: 'ops-test' },
    );

  it('ends applied with one write, under a new outcome id', async () => {
    const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
    const enrollment = Number(record!.id);
    const { id, parked, letterId } = await parkedPayment(enrollment, {
      amount_cents: 131_000,
      paid_on: '2026-11-02',
    });

    // The platform shows payments again; ops redrive the letter.
    await h.control.setConfig({ enrollment_payments_visible: true, report_moves_updated_at: true });
    expect((await redrive(letterId)).action).toBe('send');

    const outcomes = await h.received.waitFor(outcomesOn(id), 2);
    expect(outcomes.map((o) => outcomeOf(o).status)).toEqual(['unverified', 'applied']);
    // Read back as an outside consumer would (the CloudEvents SDK): two results, two ids.
    const ids = outcomes.map((o) => cloudEventOf(o.message).id);
    expect(ids).toEqual([outcomeEventId(id, 'unverified'), outcomeEventId(id, 'applied')]);
    expect(cloudEventOf(parked.message).id).not.toBe(ids[1]);
    // Exactly one write reached the platform, and it landed: no second payment.
    expect((await h.writesTo(REPORT(enrollment))).map((w) => w.applied)).toEqual([true]);
    const [after] = (await h.control.records('enrollments')).filter((e) => e.id === enrollment);
    expect(after!.rental_payments).toHaveLength(1);
    const row = await h.database.db.command.findFirst({ where: { commandId: id } });
    expect(row!.state).toBe('applied');
  });

  it('stays unverified when another command of rentbridge could explain the payment', async () => {
    const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
    const enrollment = Number(record!.id);
    const facts = { amount_cents: 142_000, paid_on: '2026-11-03' };
    // Two payments with the same facts, both parked: which payment is whose cannot be told.
    const first = await parkedPayment(enrollment, facts);
    const second = await parkedPayment(enrollment, facts);
    await h.control.setConfig({ enrollment_payments_visible: true, report_moves_updated_at: true });
    expect((await redrive(second.letterId)).action).toBe('send');
    const outcomes = await h.received.waitFor(outcomesOn(second.id), 2);
    expect(outcomes.map((o) => outcomeOf(o).status)).toEqual(['unverified', 'unverified']);
    expect(outcomeOf(outcomes[1]!).error?.message).toMatch(/which is this one cannot be told/);
    // Two writes, one per command; none after the redrive.
    expect(await h.writesTo(REPORT(enrollment))).toHaveLength(2);
    expect(first.id).not.toBe(second.id);
  });
});
