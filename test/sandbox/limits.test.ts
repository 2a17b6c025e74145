import { describe, expect, it } from 'vitest';
import { useSandbox } from './sandbox-harness.js';

describe('sandbox rate limits', () => {
  const h = useSandbox();

  describe('when the default limit applies', () => {
    it('8: allows 650 requests per minute per source IP and throttles the 651st', async () => {
      const token = await h.token(); // the authenticate call counts too: 649 reads remain
      const statuses: number[] = [];
      for (let i = 0; i < 650; i++)
        statuses.push((await h.api('GET', '/partner/v1/roles', { token })).status);
      expect(statuses.slice(0, 649).every((s) => s === 200)).toBe(true);
      expect(statuses[649]).toBe(429);
    });
  });

  describe('when a client exceeds the limit', () => {
    it('8: answers 429 rate_limited with Retry-After and the X-RateLimit headers', async () => {
      const token = await h.token();
      await h.control.setConfig({ rate_limit_per_minute: 2 });
      await h.api('GET', '/partner/v1/roles', { token });
      await h.api('GET', '/partner/v1/roles', { token });
      const response = await h.api('GET', '/partner/v1/roles', { token });
      expect(response.status).toBe(429);
      expect(response.body.error).toMatchObject({
        status: 429,
        code: 'rate_limited',
        message: expect.any(String),
      });
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(response.headers.get('x-ratelimit-limit')).toBe('2');
      expect(response.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(response.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 1);
    });

    it('8: successful responses carry the X-RateLimit headers with what remains', async () => {
      const token = await h.token();
      await h.control.setConfig({ rate_limit_per_minute: 5 });
      const first = await h.api('GET', '/partner/v1/roles', { token });
      const second = await h.api('GET', '/partner/v1/roles', { token });
      expect(second.headers.get('x-ratelimit-limit')).toBe('5');
      // The authenticate call counted too: 5 - 2 and 5 - 3.
      expect([
        first.headers.get('x-ratelimit-remaining'),
        second.headers.get('x-ratelimit-remaining'),
      ]).toEqual(['3', '2']);
      expect(second.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
    });

    it('7.4.2: a throttled write is not applied, and is in the ledger as not applied', async () => {
      const token = await h.token();
      const [application] = await h.control.addRecords('applications', [{ status: 'submitted' }]);
      await h.control.setConfig({ rate_limit_per_minute: 1 });
      await h.api('GET', '/partner/v1/roles', { token });
      const response = await h.api('POST', `/partner/v1/applications/${application?.id}/approve`, {
        token,
        body: {},
      });
      expect(response.status).toBe(429);
      expect((await h.control.records('applications'))[0]?.status).toBe('submitted');
      expect((await h.control.ledger()).writes).toEqual([
        expect.objectContaining({ applied: false, status: 429 }),
      ]);
    });

    it('8: the window rolls: requests are allowed again once it has passed', async () => {
      const token = await h.token();
      await h.control.setConfig({ rate_limit_per_minute: 1, rate_limit_window_seconds: 0.2 });
      await h.api('GET', '/partner/v1/roles', { token });
      expect((await h.api('GET', '/partner/v1/roles', { token })).status).toBe(429);
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect((await h.api('GET', '/partner/v1/roles', { token })).status).toBe(200);
    });

    it('8: the control API is never limited', async () => {
      await h.control.setConfig({ rate_limit_per_minute: 1 });
      for (let i = 0; i < 5; i++) await h.control.ledger();
      expect((await h.control.ledger()).writes).toEqual([]);
    });

    it('8: rate_limit_per_minute null turns the limit off', async () => {
      const token = await h.token();
      await h.control.setConfig({ rate_limit_per_minute: null });
      const statuses = [];
      for (let i = 0; i < 5; i++) statuses.push((await h.api('GET', '/partner/v1/roles', { token })).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
    });
  });

  describe('when customer access tokens are issued', () => {
    it('8: issue_access_token has its own limit, apart from the default one', async () => {
      const token = await h.token();
      const [customer] = await h.control.addRecords('customers', [{}]);
      await h.control.setConfig({ rate_limit_per_minute: 2, issue_token_rate_limit_per_minute: 3 });
      const path = `/partner/v1/customers/${customer?.id}/issue_access_token`;
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await h.api('POST', path, { token })).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      expect((await h.api('GET', '/partner/v1/roles', { token })).status).toBe(200);
    });

    it('8: issue_access_token defaults to 2,500 per minute', async () => {
      const token = await h.token();
      const [customer] = await h.control.addRecords('customers', [{}]);
      const response = await h.api('POST', `/partner/v1/customers/${customer?.id}/issue_access_token`, {
        token,
      });
      expect(response.headers.get('x-ratelimit-limit')).toBe('2500');
    });
  });
});
