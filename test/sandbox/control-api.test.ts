import { describe, expect, it } from 'vitest';
import { useSandbox } from './sandbox-harness.js';

describe('sandbox control API', () => {
  const h = useSandbox();
  const control = (method: string, path: string, body?: unknown) =>
    fetch(`${h.sandbox.url}/__sandbox${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  describe('when records are added', () => {
    it('DESIGN sandbox: fills in ascending ids and ISO-8601 UTC timestamps with milliseconds', async () => {
      const items = await h.control.addRecords('leads', [{ name: 'a' }, { name: 'b' }]);
      expect(items.map((r) => r.id)).toEqual([1, 2]);
      expect(items[0]?.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(items[0]?.updated_at).toBe(items[0]?.created_at);
    });

    it('DESIGN sandbox: keeps given ids and timestamps, and continues the ids after them', async () => {
      const [given] = await h.control.addRecords('leads', [
        { id: 50, updated_at: '2025-01-01T00:00:00.000Z' },
      ]);
      const [next] = await h.control.addRecords('leads', [{}]);
      expect(given).toMatchObject({ id: 50, updated_at: '2025-01-01T00:00:00.000Z' });
      expect(next?.id).toBe(51);
    });

    it('DESIGN sandbox: answers 404 for an unknown resource', async () => {
      expect((await control('POST', '/records/widgets', [{}])).status).toBe(404);
    });
  });

  describe('when a record is patched', () => {
    it('DESIGN sandbox: merges the fields and moves updated_at to now', async () => {
      const [lead] = await h.control.addRecords('leads', [
        { name: 'a', source: 'web', updated_at: '2020-01-01T00:00:00.000Z' },
      ]);
      const patched = await h.control.patchRecord('leads', lead?.id as number, { name: 'b' });
      expect(patched).toMatchObject({ name: 'b', source: 'web' });
      expect(patched.updated_at > '2020-01-01T00:00:00.000Z').toBe(true);
    });

    it('DESIGN sandbox: keeps an updated_at given in the patch', async () => {
      const [lead] = await h.control.addRecords('leads', [{}]);
      const patched = await h.control.patchRecord('leads', lead?.id as number, {
        updated_at: '2021-05-05T00:00:00.000Z',
      });
      expect(patched.updated_at).toBe('2021-05-05T00:00:00.000Z');
    });

    it('DESIGN sandbox: answers 404 for an unknown record', async () => {
      expect((await control('PATCH', '/records/leads/99', { name: 'x' })).status).toBe(404);
    });
  });

  describe('when a record is deleted', () => {
    it('DESIGN sandbox: is gone from the lists', async () => {
      await h.control.addRecords('leads', [{}, {}]);
      await h.control.deleteRecord('leads', 1);
      const response = await h.api('GET', '/partner/v1/leads');
      expect(response.body.items.map((r: { id: number }) => r.id)).toEqual([2]);
    });
  });

  describe('when the sandbox is reset', () => {
    it('DESIGN sandbox: has no records, default keys and config, no faults and clear counters', async () => {
      await h.control.addRecords('leads', [{}]);
      await h.control.createKey({ access_key: 'k', secret_key: 's' });
      await h.control.setConfig({ rate_limit_per_minute: 1, token_ttl_seconds: 5 });
      await h.control.addFault({ method: 'GET', path: '/partner/v1/leads', kind: 'error' });
      await h.control.reset();
      const token = await h.token();
      const first = await h.api('GET', '/partner/v1/leads', { token });
      expect(first.status).toBe(200);
      expect(first.body.total_count).toBe(0);
      expect(first.headers.get('x-ratelimit-limit')).toBe('650');
      const other = await h.api('POST', '/partner/v1/authenticate', {
        token: null,
        body: { access_key: 'k', secret_key: 's' },
      });
      expect(other.status).toBe(401);
    });

    it('DESIGN sandbox: invalidates the tokens issued before', async () => {
      const token = await h.token();
      await h.control.reset();
      expect((await h.api('GET', '/partner/v1/leads', { token })).status).toBe(401);
    });
  });

  describe('when the configuration is changed', () => {
    it('DESIGN sandbox: answers the whole configuration', async () => {
      const config = await h.control.setConfig({ token_ttl_seconds: 60 });
      expect(config).toMatchObject({
        token_ttl_seconds: 60,
        rate_limit_per_minute: 650,
        enhanced_security: false,
      });
    });

    it('DESIGN sandbox: rejects an unknown setting or a bad value with 400 validation_error', async () => {
      const response = await control('PUT', '/config', { token_ttl_seconds: -1, color: 'red' });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('validation_error');
    });

    it('DESIGN sandbox: rejects a webhook secret that is not whsec_<base64>', async () => {
      expect((await control('PUT', '/config', { webhook_secret: 'whsec_***' })).status).toBe(400);
    });
  });

  // Issue 30: the orderings spec 4.6.3 allows ("ties broken by id", no direction, no precision).
  describe('when created_at_precision and tie_break are set', () => {
    const customerIds = async (query = '') =>
      (await h.api('GET', `/partner/v1/customers${query}`)).body.items.map((r: { id: number }) => r.id);

    it('DESIGN sandbox: seconds gives customers created through the API or the control API a created_at to the second', async () => {
      expect(await h.control.setConfig({ created_at_precision: 'seconds' })).toMatchObject({
        created_at_precision: 'seconds',
        tie_break: null,
      });
      const created = await h.api('POST', '/v1/partners/customers', {
        body: { first_name: 'A', last_name: 'B', email: 'a@example.com', phone: '5551234567' },
      });
      const [added] = await h.control.addRecords('customers', [{ email: 'b@example.com' }]);
      const secondOnly = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
      expect(created.status).toBe(201);
      expect(created.body.created_at).toMatch(secondOnly);
      expect(added!.created_at).toMatch(secondOnly);
      await h.control.setConfig({ created_at_precision: 'milliseconds' });
      const [precise] = await h.control.addRecords('customers', [{ email: 'c@example.com' }]);
      expect(precise!.created_at).toMatch(/\.\d{3}Z$/);
    });

    it.each([
      ['ascending', 'desc', [4, 2, 3, 1]],
      ['descending', 'desc', [4, 3, 2, 1]],
      ['ascending', 'asc', [1, 2, 3, 4]],
      ['descending', 'asc', [1, 3, 2, 4]],
      [null, 'desc', [4, 3, 2, 1]],
      [null, 'asc', [1, 2, 3, 4]],
    ] as const)(
      'DESIGN sandbox: tie_break %s orders customers sharing created_at by id that way (order_direction %s)',
      async (tieBreak, direction, expected) => {
        await h.control.setConfig({ tie_break: tieBreak });
        await h.control.addRecords('customers', [
          { created_at: '2026-01-01T00:00:00Z' },
          { created_at: '2026-01-02T00:00:00Z' },
          { created_at: '2026-01-02T00:00:00Z' },
          { created_at: '2026-01-03T00:00:00Z' },
        ]);
        expect(await customerIds(`?order_by=created_at&order_direction=${direction}`)).toEqual(expected);
      },
    );

    it('DESIGN sandbox: rejects a precision or tie-break outside the choices, and reset restores the defaults', async () => {
      for (const bad of [{ created_at_precision: 'minutes' }, { tie_break: 'random' }]) {
        const response = await control('PUT', '/config', bad);
        expect(response.status).toBe(400);
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe('validation_error');
      }
      await h.control.setConfig({ created_at_precision: 'seconds', tie_break: 'ascending' });
      await h.control.reset();
      expect(await (await control('GET', '/config')).json()).toMatchObject({
        created_at_precision: 'milliseconds',
        tie_break: null,
      });
    });
  });

  describe('when a fault is added', () => {
    it('DESIGN sandbox: rejects an unknown kind with 400 validation_error', async () => {
      expect((await control('POST', '/faults', { method: 'GET', path: '/x', kind: 'explode' })).status).toBe(
        400,
      );
    });
  });

  describe('when a control request is answered', () => {
    it('7.3: carries X-Request-Id too', async () => {
      const response = await control('GET', '/ledger');
      expect(response.headers.get('x-request-id')).toBeTruthy();
    });
  });
});
