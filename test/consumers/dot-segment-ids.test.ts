import { describe, expect, it } from 'vitest';
import { applicationDecisions } from '../../src/command-types/application-decisions/application-decisions.js';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import { fillPath, InvalidPathIdError } from '../../src/partner/endpoints.js';
import { REPORT_RENTAL_PAYMENTS_PATH } from '../../src/partner/assumptions.js';
import { headersOf, uid } from './support/harness.js';
import { useHarness } from '../support/app.js';

/**
 * Issue 14, point 6: an id that is a dot segment would move a write to another URL
 * (`/applications/../approve` is `/approve`). Such a command is dead-lettered as invalid and no
 * write reaches any path; the path builder refuses dot segments as the last defence.
 */
describe('commands whose ids are dot segments', () => {
  const h = useHarness([applicationDecisions, rentalPayments]);

  async function allWrites(): Promise<string[]> {
    return (await h.control.ledger()).writes.map((w) => w.path);
  }

  it('dead-letters a decision for application ".." and writes nothing', async () => {
    const id = uid('dots');
    await h.decision({ decision_id: id, application_id: '..', decision: 'approve' });
    const [letter] = await h.deadLettersOf(id);
    expect(headersOf(letter!.message.headers)['dlq-reason']).toBe('invalid_message');
    expect(await allWrites()).not.toContain('/partner/v1/approve');
  });

  it('dead-letters a payment for enrollment "." and writes nothing', async () => {
    const id = uid('dot');
    await h.payment({ payment_id: id, enrollment_id: '.', amount_cents: 100, paid_on: '2026-11-01' });
    const [letter] = await h.deadLettersOf(id);
    expect(headersOf(letter!.message.headers)['dlq-reason']).toBe('invalid_message');
    expect(await allWrites()).not.toContain('/partner/v1/enrollments/report_rental_payments');
  });

  it('has the path builder refuse a dot segment whatever the caller checked', () => {
    expect(() => fillPath(REPORT_RENTAL_PAYMENTS_PATH, '..')).toThrow(InvalidPathIdError);
    expect(() => fillPath(REPORT_RENTAL_PAYMENTS_PATH, '.')).toThrow(InvalidPathIdError);
    expect(() => fillPath(REPORT_RENTAL_PAYMENTS_PATH, '')).toThrow(InvalidPathIdError);
    expect(fillPath(REPORT_RENTAL_PAYMENTS_PATH, 'a/..')).toBe(
      '/partner/v1/enrollments/a%2F../report_rental_payments',
    );
    expect(fillPath(REPORT_RENTAL_PAYMENTS_PATH, '...')).toBe(
      '/partner/v1/enrollments/.../report_rental_payments',
    );
  });
});
