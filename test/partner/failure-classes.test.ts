import { describe, expect, it } from 'vitest';
import { FAILURES_BY_CODE, failureKind, retryFor } from '../../src/partner/failure-classes.js';

/** Spec 7.2, row by row: what the client does with a GET, and what the guard makes of a write. */
const SPEC_7_2: [number, string, ReturnType<typeof retryFor>, ReturnType<typeof failureKind>][] = [
  [400, 'validation_error', 'no', 'rejected'],
  [400, 'invalid_request_body', 'no', 'rejected'],
  [400, 'bad_request', 'no', 'rejected'],
  [401, 'unauthenticated', 'renew_token', 'unauthenticated'],
  [402, 'processor_card_error', 'no', 'rejected'],
  [403, 'forbidden', 'no', 'rejected'],
  [404, 'not_found', 'no', 'rejected'],
  [405, 'method_not_allowed', 'no', 'rejected'],
  [409, 'invalid_state_transition', 'no', 'invalid_state'],
  [409, 'lock_failed', 'no', 'lock_failed'],
  [422, 'validation_error', 'no', 'rejected'],
  [429, 'rate_limited', 'retry', 'throttled'],
  [500, 'api_error', 'retry', 'uncertain'],
  [503, 'request_timeout', 'retry', 'uncertain'],
];

describe('the one classification of Partner API failures', () => {
  describe('for every code of spec 7.2 with its status', () => {
    it.each(SPEC_7_2)('%i %s: the client says %s, the guard says %s', (status, code, retry, kind) => {
      expect(retryFor(status, code)).toBe(retry);
      expect(failureKind(status, code)).toBe(kind);
    });

    it('lists every code of the spec, and no other', () => {
      expect(Object.keys(FAILURES_BY_CODE).sort()).toEqual([...new Set(SPEC_7_2.map(([, c]) => c))].sort());
    });
  });

  describe('when a code comes with a status it does not belong to', () => {
    it('lets the status decide for the guard (a 409 code on a 400 is a refusal)', () => {
      expect(failureKind(400, 'lock_failed')).toBe('rejected');
      expect(failureKind(503, 'invalid_state_transition')).toBe('uncertain');
    });

    it('lets a status that says retry win for the client', () => {
      expect(retryFor(503, 'bad_request')).toBe('retry');
    });
  });

  describe('when there is no HTTP answer', () => {
    it('is uncertain for the guard (the write may have been applied)', () => {
      expect(failureKind(null, null)).toBe('uncertain');
    });
  });
});
