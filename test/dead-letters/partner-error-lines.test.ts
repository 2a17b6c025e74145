import { describe, expect, it } from 'vitest';
import { partnerErrorLines } from '../../src/cli/commands/dlq.js';
import { DECLINED_CARD } from './build-dead-letter.js';

describe('rentbridge dlq show', () => {
  describe("when the letter carries the Partner API's whole error (dlq-error)", () => {
    it("prints the processor's reason of a declined card", () => {
      const lines = partnerErrorLines(JSON.stringify(DECLINED_CARD));
      expect(lines).toContain('  request id    pay-1.a1');
      expect(lines).toContain('  processor     card_declined, decline code insufficient_funds');
    });

    it('prints every validation error, the details, the ids of a server error and extra fields', () => {
      const lines = partnerErrorLines(
        JSON.stringify({
          code: 'bad_request',
          code_missing: true,
          status: 422,
          message: 'm',
          request_id: 'r',
          errors: ['amount_cents must be positive', 'paid_on must be a date'],
          details: { ssn: 'does not match' },
          error_id: 'err_1',
          error_signature: 'sig_1',
          extra: { window_closed_at: '2026-11-05' },
        }),
      );
      expect(lines).toEqual(
        expect.arrayContaining([
          '  code          (none in the answer: read as bad_request)',
          '  invalid       amount_cents must be positive',
          '  invalid       paid_on must be a date',
          '  detail        ssn: does not match',
          '  error id      err_1  signature sig_1',
          '  extra         {"window_closed_at":"2026-11-05"}',
        ]),
      );
    });
  });

  describe('when the letter has no dlq-error header (written before, or by hand)', () => {
    it('prints nothing more', () => {
      expect(partnerErrorLines(undefined)).toEqual([]);
      expect(partnerErrorLines('{cut at the bou')).toEqual([]);
    });
  });
});
