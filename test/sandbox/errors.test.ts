import { describe, expect, it } from 'vitest';
import { useSandbox } from './sandbox-harness.js';

describe('sandbox errors', () => {
  const h = useSandbox();

  describe('when any request is answered', () => {
    it('7.3.1: a success carries X-Request-Id', async () => {
      const response = await h.api('GET', '/partner/v1/roles');
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('7.3.2: a valid client X-Request-Id is echoed unchanged', async () => {
      const id = 'abc_DEF-1.2';
      const response = await h.api('GET', '/partner/v1/roles', { headers: { 'x-request-id': id } });
      expect(response.headers.get('x-request-id')).toBe(id);
    });

    it('7.3.2: an X-Request-Id of 129 characters is replaced by a UUID', async () => {
      const response = await h.api('GET', '/partner/v1/roles', {
        headers: { 'x-request-id': 'a'.repeat(129) },
      });
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('7.3.2: an X-Request-Id with other characters is replaced by a UUID', async () => {
      const response = await h.api('GET', '/partner/v1/roles', { headers: { 'x-request-id': 'bad id!' } });
      expect(response.headers.get('x-request-id')).not.toBe('bad id!');
    });

    it('7.1: the envelope request_id equals the X-Request-Id header', async () => {
      const response = await h.api('GET', '/partner/v1/roles', {
        token: null,
        headers: { 'x-request-id': 'req-7' },
      });
      expect(response.body.error).toEqual({
        message: expect.any(String),
        status: 401,
        code: 'unauthenticated',
        request_id: 'req-7',
      });
      expect(response.headers.get('x-request-id')).toBe('req-7');
    });
  });

  describe('when the request itself is wrong', () => {
    it('7.2: bad JSON is 400 invalid_request_body', async () => {
      const response = await h.api('POST', '/partner/v1/applications/1/approve', { rawBody: '{"reason":' });
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('invalid_request_body');
    });

    it('7.2: a wrong method on an existing path is 405 method_not_allowed', async () => {
      const response = await h.api('DELETE', '/partner/v1/applications');
      expect(response.status).toBe(405);
      expect(response.body.error.code).toBe('method_not_allowed');
      expect(response.headers.get('allow')).toBe('GET');
    });

    it('7.2: GET on a write path is 405 method_not_allowed', async () => {
      expect((await h.api('GET', '/partner/v1/applications/1/approve')).status).toBe(405);
    });

    it('7.2: an unknown path is 404 not_found in the envelope', async () => {
      const response = await h.api('GET', '/partner/v1/nothing-here');
      expect(response.status).toBe(404);
      expect(response.body.error).toMatchObject({ code: 'not_found', status: 404 });
    });
  });

  describe('when an error carries its own fields', () => {
    it('7.1: api_error carries a unique error_id and an error_signature stable per fault', async () => {
      await h.control.addFault({ method: 'GET', path: '/partner/v1/roles', kind: 'error', times: 2 });
      const first = await h.api('GET', '/partner/v1/roles');
      const second = await h.api('GET', '/partner/v1/roles');
      expect(first.status).toBe(500);
      expect(first.body.error.code).toBe('api_error');
      expect(first.body.error.error_id).not.toBe(second.body.error.error_id);
      expect(first.body.error.error_signature).toBe(second.body.error.error_signature);
    });

    it('7.1: api_errors of different faults have different signatures', async () => {
      await h.control.addFault({ method: 'GET', path: '/partner/v1/roles', kind: 'error' });
      await h.control.addFault({ method: 'GET', path: '/partner/v1/users', kind: 'error' });
      const a = await h.api('GET', '/partner/v1/roles');
      const b = await h.api('GET', '/partner/v1/users');
      expect(a.body.error.error_signature).not.toBe(b.body.error.error_signature);
    });

    it('7.1: processor_card_error (402) carries processor_code and processor_decline_code', async () => {
      const [enrollment] = await h.control.addRecords('enrollments', [
        { status: 'active', rental_payments: [] },
      ]);
      const response = await h.api(
        'POST',
        `/partner/v1/enrollments/${enrollment?.id}/report_rental_payments`,
        {
          body: { rental_payments: [{ amount_cents: 402, paid_on: '2026-03-01' }] },
        },
      );
      expect(response.status).toBe(402);
      expect(response.body.error).toMatchObject({
        code: 'processor_card_error',
        processor_code: expect.any(String),
        processor_decline_code: expect.any(String),
      });
      const [stored] = await h.control.records('enrollments');
      expect(stored?.rental_payments).toEqual([]);
    });

    it('7.2: every code of the table is reachable through a fault, with its status', async () => {
      const codes: Array<[string, number]> = [
        ['validation_error', 400],
        ['invalid_request_body', 400],
        ['bad_request', 400],
        ['unauthenticated', 401],
        ['processor_card_error', 402],
        ['forbidden', 403],
        ['not_found', 404],
        ['method_not_allowed', 405],
        ['invalid_state_transition', 409],
        ['lock_failed', 409],
        ['validation_error', 422],
        ['rate_limited', 429],
        ['api_error', 500],
        ['request_timeout', 503],
      ];
      for (const [code, status] of codes) {
        await h.control.addFault({ method: 'GET', path: '/partner/v1/leads', kind: 'error', code, status });
        const response = await h.api('GET', '/partner/v1/leads');
        expect([response.status, response.body.error.code], code).toEqual([status, code]);
      }
    });

    it('7.1: a fault with code null answers a legacy error without code', async () => {
      await h.control.addFault({
        method: 'GET',
        path: '/partner/v1/leads',
        kind: 'error',
        code: null,
        status: 422,
      });
      const response = await h.api('GET', '/partner/v1/leads');
      expect(response.status).toBe(422);
      expect(response.body.error).not.toHaveProperty('code');
    });
  });
});
