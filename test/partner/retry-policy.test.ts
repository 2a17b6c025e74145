import { describe, expect, it } from 'vitest';
import { MAX_WAIT_MS, backoffMs, retryFor } from '../../src/partner/retry-policy.js';

describe('retry policy', () => {
  describe('when the API names a known code', () => {
    it.each([
      [429, 'rate_limited', 'retry'],
      [500, 'api_error', 'retry'],
      [503, 'request_timeout', 'retry'],
      [401, 'unauthenticated', 'renew_token'],
      [400, 'validation_error', 'no'],
      [400, 'bad_request', 'no'],
      [402, 'processor_card_error', 'no'],
      [403, 'forbidden', 'no'],
      [404, 'not_found', 'no'],
      [409, 'invalid_state_transition', 'no'],
      [409, 'lock_failed', 'no'],
      [422, 'validation_error', 'no'],
    ])('decides %i %s → %s', (status, code, expected) => {
      expect(retryFor(status, code)).toBe(expected);
    });
  });

  describe('when the code is unknown', () => {
    it('decides by status', () => {
      expect(retryFor(502, 'brand_new_code')).toBe('retry');
      expect(retryFor(418, 'brand_new_code')).toBe('no');
      expect(retryFor(401, 'brand_new_code')).toBe('renew_token');
    });
  });

  describe('when a 5xx carries a code of a client error', () => {
    it('retries by status', () => {
      expect(retryFor(503, 'bad_request')).toBe('retry');
    });
  });
});

describe('backoffMs', () => {
  describe('when throttled', () => {
    it('waits Retry-After first, then doubles it plus at most one second of jitter', () => {
      expect(backoffMs(1, { throttled: true, retryAfterSeconds: 2 }, () => 0.99)).toBe(2000);
      const second = backoffMs(2, { throttled: true, retryAfterSeconds: 2 }, () => 0.5);
      expect(second).toBe(4500);
      const third = backoffMs(3, { throttled: true, retryAfterSeconds: 2 }, () => 0.999);
      expect(third).toBeGreaterThanOrEqual(8000);
      expect(third).toBeLessThan(9000);
    });

    it('never waits more than 60 s', () => {
      expect(backoffMs(5, { throttled: true, retryAfterSeconds: 30 }, () => 0.9)).toBe(MAX_WAIT_MS);
    });
  });

  describe('when the server failed or the network did', () => {
    it('backs off exponentially from half a second', () => {
      expect(backoffMs(1, { throttled: false }, () => 0)).toBe(500);
      expect(backoffMs(3, { throttled: false }, () => 0)).toBe(2000);
    });
  });
});
