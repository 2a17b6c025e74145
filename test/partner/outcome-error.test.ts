import { describe, expect, it } from 'vitest';
import {
  PartnerNetworkError,
  PartnerResponseError,
  PartnerTimeoutError,
  toOutcomeError,
} from '../../src/partner/errors.js';
import { classifyFailure } from '../../src/guard/machine/guard-machine.js';
import { toApiError } from '../../src/partner/transport.js';

const context = { method: 'POST', endpoint: 'POST /partner/v1/x', sentRequestId: 'cmd-1.a1' };
const answer = (status: number, error: Record<string, unknown>) =>
  toApiError(status, JSON.stringify({ error }), new Headers({ 'x-request-id': 'cmd-1.a1' }), context);

describe('the Partner API error as outcomes carry it', () => {
  describe('when the envelope has no code', () => {
    it('reads bad_request and says the code was missing', () => {
      expect(toOutcomeError(answer(422, { message: 'not eligible', status: 422 }))).toEqual({
        code: 'bad_request',
        code_missing: true,
        status: 422,
        message: 'not eligible',
        request_id: 'cmd-1.a1',
      });
    });
  });

  describe('when a code brings fields the spec does not name', () => {
    it('keeps them under extra', () => {
      const error = answer(409, { code: 'window_closed', status: 409, message: 'm', closes_at: 'x', n: 1 });
      expect(toOutcomeError(error)).toMatchObject({ code: 'window_closed', extra: { closes_at: 'x', n: 1 } });
      expect(toOutcomeError(error)).not.toHaveProperty('code_missing');
    });

    it('keeps at most 4 KB of them, and says what was dropped', () => {
      const error = answer(409, { code: 'c', status: 409, message: 'm', blob: 'x'.repeat(5000) });
      const extra = toOutcomeError(error)!.extra!;
      expect(Object.keys(extra)).toEqual(['_truncated']);
      expect(String(extra._truncated)).toContain('blob');
    });
  });

  describe('when no answer came', () => {
    it('names the failure and the request id sent', () => {
      const error = new PartnerTimeoutError('timed out', { requestId: 'cmd-1.a2', timeoutMs: 10 });
      expect(toOutcomeError(error)).toEqual({
        code: 'timeout',
        status: null,
        message: 'timed out',
        request_id: 'cmd-1.a2',
      });
    });
  });

  describe('when the failure has no answer, whatever it was', () => {
    it.each([
      [new PartnerTimeoutError('t', { requestId: 'r', timeoutMs: 1 }), 'timeout'],
      [new PartnerNetworkError('n', { requestId: 'r' }), 'network_error'],
      [new PartnerResponseError('s', { requestId: 'r' }), 'invalid_response'],
      [new TypeError('bug'), 'internal_error'],
    ])('gives a stable code, never a class name (%s)', (error, code) => {
      expect(classifyFailure(error)).toMatchObject({ code, status: null, kind: 'uncertain' });
      if (error instanceof PartnerTimeoutError || error instanceof PartnerNetworkError)
        expect(toOutcomeError(error)!.code).toBe(code);
    });
  });
});
