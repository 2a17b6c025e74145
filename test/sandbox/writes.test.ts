import { describe, expect, it } from 'vitest';
import { useSandbox } from './sandbox-harness.js';

const customerInput = (overrides: Record<string, unknown> = {}) => ({
  first_name: 'Ada',
  last_name: 'Okafor',
  email: 'ada@example.com',
  phone: '5551234567',
  ...overrides,
});

describe('sandbox writes', () => {
  const h = useSandbox();

  describe('when a customer is created', () => {
    it('4.2: POST /v1/partners/customers answers 201 with the stored customer', async () => {
      const response = await h.api('POST', '/v1/partners/customers', { body: customerInput() });
      expect(response.status).toBe(201);
      expect(response.body).toMatchObject({ id: 1, email: 'ada@example.com' });
      expect(response.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const list = await h.api('GET', '/partner/v1/customers');
      expect(list.body.items).toEqual([response.body]);
    });

    it('2.2: an e-mail already taken is 422 validation_error', async () => {
      await h.api('POST', '/v1/partners/customers', { body: customerInput() });
      const response = await h.api('POST', '/v1/partners/customers', {
        body: customerInput({ email: 'ADA@example.com' }),
      });
      expect(response.status).toBe(422);
      expect(response.body.error.code).toBe('validation_error');
      expect(response.body.error.errors).toEqual(['email has already been taken']);
    });

    it('7.2: a missing field is 400 validation_error naming it', async () => {
      const response = await h.api('POST', '/v1/partners/customers', {
        body: customerInput({ phone: undefined }),
      });
      expect(response.status).toBe(400);
      expect(response.body.error.errors).toEqual(['phone is required']);
    });
  });

  describe('when a customer is checked', () => {
    it('4.2: a customer that passes answers 200', async () => {
      const [customer] = await h.control.addRecords('customers', [customerInput()]);
      const response = await h.api('POST', '/partner/v1/customers/check', {
        body: { customer_id: customer?.id },
      });
      expect(response.status).toBe(200);
      expect(response.body.eligible).toBe(true);
    });

    it('4.2/7.1: a failing check is 422 with details, a map of field to reason', async () => {
      const response = await h.api('POST', '/partner/v1/customers/check', {
        body: customerInput({ email: 'nope', phone: '12' }),
      });
      expect(response.status).toBe(422);
      expect(response.body.error.details).toEqual({
        email: expect.any(String),
        phone: expect.any(String),
      });
    });

    it('4.2: a check of an unknown customer is 404 not_found', async () => {
      const response = await h.api('POST', '/partner/v1/customers/check', { body: { customer_id: 77 } });
      expect(response.status).toBe(404);
    });
  });

  describe('when a customer access token is issued', () => {
    it('4.2: answers a token and its lifetime', async () => {
      const [customer] = await h.control.addRecords('customers', [customerInput()]);
      const response = await h.api('POST', `/partner/v1/customers/${customer?.id}/issue_access_token`);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ token: expect.any(String), expires_in: 3600 });
    });

    it('4.2: an unknown customer is 404 not_found', async () => {
      expect((await h.api('POST', '/partner/v1/customers/404/issue_access_token')).status).toBe(404);
    });
  });

  describe('when an enrollment is created', () => {
    it('3: a customer gets an active enrollment', async () => {
      const [customer] = await h.control.addRecords('customers', [customerInput()]);
      const response = await h.api('POST', '/partner/v1/enrollments', {
        body: { customer_id: customer?.id },
      });
      expect(response.status).toBe(201);
      expect(response.body).toMatchObject({
        customer_id: customer?.id,
        status: 'active',
        rental_payments: [],
      });
    });

    it('3/7.1: a second active enrollment is 400 with message and status and no code', async () => {
      const [customer] = await h.control.addRecords('customers', [customerInput()]);
      await h.api('POST', '/partner/v1/enrollments', { body: { customer_id: customer?.id } });
      const response = await h.api('POST', '/partner/v1/enrollments', {
        body: { customer_id: customer?.id },
      });
      expect(response.status).toBe(400);
      expect(response.body.error).toEqual({
        message: expect.any(String),
        status: 400,
        request_id: response.headers.get('x-request-id'),
      });
    });

    it('3: a customer whose enrollment ended can enroll again', async () => {
      const [customer] = await h.control.addRecords('customers', [customerInput()]);
      await h.control.addRecords('enrollments', [{ customer_id: customer?.id, status: 'ended' }]);
      const response = await h.api('POST', '/partner/v1/enrollments', {
        body: { customer_id: customer?.id },
      });
      expect(response.status).toBe(201);
    });
  });

  describe('when rental payments are reported', () => {
    const payment = { amount_cents: 125_000, paid_on: '2026-03-01', period: '2026-03' };

    it('4.3: appends the payments to the enrollment and answers 201', async () => {
      const [enrollment] = await h.control.addRecords('enrollments', [
        { status: 'active', updated_at: '2020-01-01T00:00:00.000Z' },
      ]);
      const response = await h.api(
        'POST',
        `/partner/v1/enrollments/${enrollment?.id}/report_rental_payments`,
        {
          body: { rental_payments: [payment] },
        },
      );
      expect(response.status).toBe(201);
      expect(response.body.rental_payments).toEqual([
        expect.objectContaining({ ...payment, reported_at: expect.any(String) }),
      ]);
      const [stored] = (await h.api('GET', '/partner/v1/enrollments')).body.items;
      expect(stored.rental_payments).toEqual(response.body.rental_payments);
      expect(stored.updated_at > '2020-01-01T00:00:00.000Z').toBe(true);
    });

    it('7.2: a malformed payment is 422 validation_error with errors[]', async () => {
      const [enrollment] = await h.control.addRecords('enrollments', [{ status: 'active' }]);
      const response = await h.api(
        'POST',
        `/partner/v1/enrollments/${enrollment?.id}/report_rental_payments`,
        {
          body: { rental_payments: [{ amount_cents: -1, paid_on: 'yesterday' }] },
        },
      );
      expect(response.status).toBe(422);
      expect(response.body.error.code).toBe('validation_error');
      expect(response.body.error.errors).toHaveLength(2);
    });

    it('3: an enrollment that is not active is 409 invalid_state_transition', async () => {
      const [enrollment] = await h.control.addRecords('enrollments', [{ status: 'ended' }]);
      const response = await h.api(
        'POST',
        `/partner/v1/enrollments/${enrollment?.id}/report_rental_payments`,
        {
          body: { rental_payments: [payment] },
        },
      );
      expect(response.status).toBe(409);
      expect(response.body.error.code).toBe('invalid_state_transition');
    });

    it('4.3: an unknown enrollment is 404 not_found', async () => {
      const response = await h.api('POST', '/partner/v1/enrollments/999/report_rental_payments', {
        body: { rental_payments: [payment] },
      });
      expect(response.status).toBe(404);
    });
  });

  describe('when an application is decided', () => {
    it('3: approving a submitted application answers 200 with it approved and updated_at moved', async () => {
      const [application] = await h.control.addRecords('applications', [
        { status: 'submitted', updated_at: '2020-01-01T00:00:00.000Z' },
      ]);
      const response = await h.api('POST', `/partner/v1/applications/${application?.id}/approve`, {
        body: {},
      });
      expect(response.status).toBe(200);
      expect(response.body.status).toBe('approved');
      expect(response.body.updated_at > '2020-01-01T00:00:00.000Z').toBe(true);
    });

    it('3: declining an application in review keeps the reason', async () => {
      const [application] = await h.control.addRecords('applications', [{ status: 'in_review' }]);
      const response = await h.api('POST', `/partner/v1/applications/${application?.id}/decline`, {
        body: { reason: 'income' },
      });
      expect(response.body).toMatchObject({ status: 'declined', decision_reason: 'income' });
    });

    it('3: approving an approved application is 409 invalid_state_transition', async () => {
      const [application] = await h.control.addRecords('applications', [{ status: 'approved' }]);
      const response = await h.api('POST', `/partner/v1/applications/${application?.id}/approve`, {
        body: {},
      });
      expect(response.status).toBe(409);
      expect(response.body.error.code).toBe('invalid_state_transition');
    });

    it('3: declining an approved application is 409 invalid_state_transition', async () => {
      const [application] = await h.control.addRecords('applications', [{ status: 'approved' }]);
      const response = await h.api('POST', `/partner/v1/applications/${application?.id}/decline`, {
        body: {},
      });
      expect(response.status).toBe(409);
    });

    it('3: deciding an unknown application is 404 not_found', async () => {
      const response = await h.api('POST', '/partner/v1/applications/12345/approve', { body: {} });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('not_found');
    });
  });
});
