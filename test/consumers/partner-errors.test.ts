import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import type { CommandOutcome } from '../../src/contracts/outcomes.js';
import { registry } from '../../src/metrics.js';
import type { FaultInput } from '../../src/dev/sandbox/faults.js';
import { ajvErrors, cloudEventOf, headerMap, loadContracts, type Contracts } from '../support/contracts.js';
import { FAST_GUARD, uid } from './support/harness.js';
import { useHarness } from '../support/app.js';

/**
 * Issue 21: a refused command's outcome and dead letter carry the Partner API's error whole, as
 * docs/schemas/command-outcome.json says, read back from Kafka as a back-office reads them.
 */

const REPORT = (id: number) => `/partner/v1/enrollments/${id}/report_rental_payments`;

describe('outcomes of commands the Partner API refuses', () => {
  const h = useHarness([rentalPayments], { guard: { ...FAST_GUARD, maxRetries: 2 } });
  let contracts: Contracts;

  beforeAll(async () => {
    contracts = await loadContracts();
  });

  /** Sends one payment against a fault; returns its outcome, dead letter and the outcome's message. */
  async function refused(
    fault: Omit<FaultInput, 'method' | 'path' | 'kind'> & { kind?: FaultInput['kind'] },
  ) {
    const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
    const enrollment = Number(record!.id);
    await h.control.addFault({
      method: 'POST',
      path: REPORT(enrollment),
      kind: 'error',
      times: null,
      ...fault,
    });
    const id = await h.payment(
      { payment_id: uid('pay'), enrollment_id: enrollment, amount_cents: 1000, paid_on: '2026-11-01' },
      { 'webhook-id': `msg_${id36()}`, 'request-id': `req-${id36()}` },
    );
    const [outcome] = await h.outcomesOf(id);
    const [message] = await h.received.waitFor(
      (r) => r.topic.startsWith('outcomes.') && headerMap(r.message.headers)['command-id'] === id,
    );
    const [letter] = await h.deadLettersOf(id);
    return { id, outcome: outcome!, message: message!.message, letter: letter!.message };
  }

  function expectValid(outcome: CommandOutcome) {
    const validate = contracts.schema('command-outcome');
    expect(validate(outcome), ajvErrors(validate)).toBe(true);
  }

  describe('when a card payment is declined (402 processor_card_error)', () => {
    it("keeps the processor's reason in the outcome and the dead letter", async () => {
      const { outcome, letter } = await refused({
        code: 'processor_card_error',
        envelope: {
          message: 'Your card was declined.',
          processor_code: 'card_declined',
          processor_decline_code: 'insufficient_funds',
        },
      });
      expectValid(outcome);
      expect(outcome.status).toBe('rejected');
      expect(outcome.error).toMatchObject({
        code: 'processor_card_error',
        status: 402,
        message: 'Your card was declined.',
        processor_code: 'card_declined',
        processor_decline_code: 'insufficient_funds',
      });
      expect(outcome.error!.request_id).toBe(outcome.partner_request_ids.at(-1));
      expect(JSON.parse(headerMap(letter.headers)['dlq-error']!)).toEqual(outcome.error);
    });
  });

  describe('when a parameter is refused (400 validation_error)', () => {
    it('keeps every validation error', async () => {
      const errors = ['amount_cents must be at most 10000000', 'paid_on must be a date'];
      const { outcome } = await refused({ code: 'validation_error', envelope: { errors } });
      expectValid(outcome);
      expect(outcome.error).toMatchObject({ code: 'validation_error', status: 400, errors });
    });
  });

  describe('when a legacy business rule refuses it (422 without code)', () => {
    it('reports bad_request and says the code was missing', async () => {
      const { outcome } = await refused({
        code: null,
        status: 422,
        envelope: { message: 'Customer is not eligible.' },
      });
      expectValid(outcome);
      expect(outcome.error).toMatchObject({
        code: 'bad_request',
        code_missing: true,
        status: 422,
        message: 'Customer is not eligible.',
      });
    });
  });

  describe('when the Partner API keeps failing (500 api_error)', () => {
    it('keeps the error id and signature of the last failure', async () => {
      const { outcome } = await refused({ code: 'api_error' });
      expectValid(outcome);
      expect(outcome.status).toBe('exhausted');
      expect(outcome.error).toMatchObject({ code: 'api_error', status: 500 });
      expect(outcome.error!.error_id).toEqual(expect.any(String));
      expect(outcome.error!.error_signature).toMatch(/^sig_/);
    });
  });

  describe('when a code the spec does not know comes with fields of its own', () => {
    it('keeps the code and the unknown fields under extra, bounded', async () => {
      const { outcome } = await refused({
        code: 'payment_window_closed',
        status: 409,
        envelope: { window_closed_at: '2026-11-05T00:00:00Z', retry_in_period: '2026-12' },
      });
      expectValid(outcome);
      expect(outcome.status).toBe('rejected');
      expect(outcome.error).toMatchObject({
        code: 'payment_window_closed',
        status: 409,
        extra: { window_closed_at: '2026-11-05T00:00:00Z', retry_in_period: '2026-12' },
      });
      const big = await refused({ code: 'huge_error', status: 409, envelope: { blob: 'x'.repeat(10_000) } });
      expectValid(big.outcome);
      expect(JSON.stringify(big.outcome.error!.extra).length).toBeLessThan(4096);
      expect(big.outcome.error!.extra).toHaveProperty('_truncated');
    });
  });

  describe('when no answer comes and the read-back cannot tell (issue 27, item 4)', () => {
    afterAll(async () => {
      await h.control.setConfig({ enrollment_payments_visible: true });
    });

    it('says `timeout`, a documented stable code, in the outcome and the dead letter', async () => {
      await h.control.setConfig({ enrollment_payments_visible: false });
      const { outcome, message, letter } = await refused({ kind: 'apply_then_timeout', times: 1 });
      expect(outcome).toMatchObject({ status: 'unverified', error: { code: 'timeout', status: null } });
      expect(cloudEventOf(message).data).toEqual(outcome);
      expectValid(outcome);
      // The schema lists it among the codes of a failure without an answer.
      const listed = JSON.stringify(contracts.schema('command-outcome').schema);
      for (const code of ['timeout', 'network_error', 'interrupted']) expect(listed).toContain(`"${code}"`);
      expect(listed).not.toContain('PartnerTimeoutError');
      expect(headerMap(letter.headers)).toMatchObject({
        'dlq-reason': 'unverified',
        'dlq-error-code': 'timeout',
      });
    });
  });

  describe('the messages themselves', () => {
    it('are CloudEvents by the Kafka binding, with the trail of their webhook', async () => {
      const { message, letter } = await refused({ code: 'forbidden' });
      const outcomeEvent = cloudEventOf(message);
      expect(headerMap(message.headers)).toMatchObject({
        ce_id: outcomeEvent.id,
        ce_type: outcomeEvent.type,
        'webhook-id': expect.stringMatching(/^msg_/),
        'request-id': expect.stringMatching(/^req-/),
      });
      const letterEvent = cloudEventOf(letter);
      expect(headerMap(letter.headers)).toMatchObject({
        ce_id: letterEvent.id,
        ce_type: 'rentbridge.command.rental-payment',
        'webhook-id': expect.stringMatching(/^msg_/),
        'dlq-reason': 'rejected',
        'dlq-error-code': 'forbidden',
      });
    });

    it('are counted by code, unknown codes as other', async () => {
      const text = await registry.metrics();
      const count = (code: string) =>
        Number(
          text
            .split('\n')
            .find((l) =>
              l.startsWith(`rentbridge_commands_refused_total{command="rental_payment",code="${code}"}`),
            )
            ?.split(' ')
            .pop() ?? 0,
        );
      expect(count('processor_card_error')).toBe(1);
      expect(count('validation_error')).toBe(1);
      expect(count('bad_request')).toBe(1);
      expect(count('other')).toBe(2);
      expect(text).not.toContain('code="payment_window_closed"');
    });
  });
});

let n = 0;
function id36(): string {
  return `${Date.now().toString(36)}${++n}`;
}
