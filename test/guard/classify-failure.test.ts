import { describe, expect, it } from 'vitest';
import { classifyFailure } from '../../src/guard/machine/guard-machine.js';
import { PartnerApiError, PartnerNetworkError, PartnerTimeoutError } from '../../src/partner/index.js';

const api = (status: number, code: string, extra: Record<string, unknown> = {}) =>
  new PartnerApiError(
    { status, code, requestId: 'r1', message: code, method: 'POST', endpoint: 'POST /x', ...extra },
    { repeatable: false },
  );

describe('classifyFailure', () => {
  describe('when the API answered with an error', () => {
    it.each([
      [429, 'rate_limited', 'throttled'],
      [401, 'unauthenticated', 'unauthenticated'],
      [409, 'invalid_state_transition', 'invalid_state'],
      [409, 'lock_failed', 'lock_failed'],
      [404, 'not_found', 'rejected'],
      [422, 'validation_error', 'rejected'],
      [409, 'some_new_code', 'rejected'],
      [500, 'api_error', 'uncertain'],
      [503, 'request_timeout', 'uncertain'],
    ])('reads %i %s as %s', (status, code, kind) => {
      expect(classifyFailure(api(status, code)).kind).toBe(kind);
    });

    it('keeps Retry-After and the request id', () => {
      expect(classifyFailure(api(429, 'rate_limited', { retryAfterSeconds: 7 }))).toMatchObject({
        retryAfterSeconds: 7,
        requestId: 'r1',
        status: 429,
        code: 'rate_limited',
      });
    });
  });

  describe('when no answer came', () => {
    it('reads time-outs and network errors as uncertain: the write may have landed', () => {
      expect(classifyFailure(new PartnerTimeoutError('t', { requestId: 'r', timeoutMs: 1 })).kind).toBe(
        'uncertain',
      );
      expect(classifyFailure(new PartnerNetworkError('n', { requestId: 'r' })).kind).toBe('uncertain');
      expect(classifyFailure(new Error('boom')).kind).toBe('uncertain');
    });
  });
});
