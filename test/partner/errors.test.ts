import { describe, expect, it } from 'vitest';
import { PartnerApiError } from '../../src/partner/errors.js';
import { outgoingRequestId, toRequestId, parseRetryAfter, toApiError } from '../../src/partner/transport.js';

const context = { method: 'GET', endpoint: 'GET /partner/v1/applications', sentRequestId: 'sent-1' };

function envelope(error: Record<string, unknown>): string {
  return JSON.stringify({ error: { message: 'm', status: 400, request_id: 'env-id', ...error } });
}

describe('toApiError', () => {
  describe('when the envelope has no code (a legacy business-rule error)', () => {
    it('reads it as bad_request, not retriable', () => {
      const error = toApiError(400, envelope({}), new Headers({ 'x-request-id': 'answered-1' }), context);
      expect(error).toBeInstanceOf(PartnerApiError);
      expect(error.code).toBe('bad_request');
      expect(error.retriable).toBe(false);
      expect(error.requestId).toBe('answered-1');
    });
  });

  describe('when the envelope carries the extra fields of spec 7.1', () => {
    it('keeps every one of them', () => {
      const error = toApiError(
        500,
        envelope({
          status: 500,
          code: 'api_error',
          error_id: 'e1',
          error_signature: 's1',
          errors: ['per_page must be >= 1'],
          details: { email: 'taken' },
          processor_code: 'p1',
          processor_decline_code: 'd1',
        }),
        new Headers(),
        context,
      );
      expect(error).toMatchObject({
        status: 500,
        code: 'api_error',
        errorId: 'e1',
        errorSignature: 's1',
        errors: ['per_page must be >= 1'],
        details: { email: 'taken' },
        processorCode: 'p1',
        processorDeclineCode: 'd1',
        retriable: true,
        requestId: 'env-id',
      });
    });
  });

  describe('when a 429 carries Retry-After and X-RateLimit-Reset', () => {
    it('reports both', () => {
      const error = toApiError(
        429,
        envelope({ status: 429, code: 'rate_limited' }),
        new Headers({ 'retry-after': '7', 'x-ratelimit-reset': '1900000000' }),
        context,
      );
      expect(error.retryAfterSeconds).toBe(7);
      expect(error.rateLimitReset?.getTime()).toBe(1_900_000_000_000);
      expect(error.retriable).toBe(true);
    });
  });

  describe('when the body is not JSON', () => {
    it('decides by status and keeps the sent request id', () => {
      const error = toApiError(502, '<html>bad gateway</html>', new Headers(), context);
      expect(error.status).toBe(502);
      expect(error.retriable).toBe(true);
      expect(error.requestId).toBe('sent-1');
    });
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('3')).toBe(3);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 0)).toBe(10);
    expect(parseRetryAfter(null)).toBeUndefined();
  });
});

describe('request ids', () => {
  describe('when the caller gives an id that follows spec 7.3', () => {
    it('sends it unchanged', () => {
      expect(outgoingRequestId('decision_7f3c.1-a')).toBe('decision_7f3c.1-a');
    });
  });

  describe('when the caller gives none or an invalid one', () => {
    it('generates a valid one', () => {
      expect(outgoingRequestId('has space')).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
      expect(outgoingRequestId('x'.repeat(129))).toHaveLength(36);
      expect(outgoingRequestId()).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
    });
  });

  it('turns any text into a valid id', () => {
    expect(toRequestId('decision:abc/1')).toBe('decision_abc_1');
    expect(toRequestId('y'.repeat(300))).toHaveLength(128);
  });
});
