import { describe, expect, it } from 'vitest';
import { createSandboxControl, startSandbox } from '../../src/dev/sandbox/index.js';
import { eventually } from './eventually.js';
import { useSandbox } from './sandbox-harness.js';

const APPROVE = '/partner/v1/applications/*/approve';

describe('sandbox faults and ledger', () => {
  const h = useSandbox();

  async function submitted() {
    const [application] = await h.control.addRecords('applications', [{ status: 'submitted' }]);
    return application?.id as number;
  }
  const statusOf = async (id: number) =>
    (await h.control.records('applications')).find((a) => a.id === id)?.status;

  describe('when an error fault matches', () => {
    it('DESIGN sandbox: answers its status and code without applying the write', async () => {
      const id = await submitted();
      await h.control.addFault({
        method: 'POST',
        path: APPROVE,
        kind: 'error',
        status: 503,
        code: 'request_timeout',
      });
      const response = await h.api('POST', `/partner/v1/applications/${id}/approve`, { body: {} });
      expect(response.status).toBe(503);
      expect(response.body.error.code).toBe('request_timeout');
      expect(await statusOf(id)).toBe('submitted');
      expect((await h.control.ledger()).writes).toEqual([
        expect.objectContaining({ applied: false, status: 503 }),
      ]);
    });

    it('DESIGN sandbox: takes its code from the status when only a status is given', async () => {
      await h.control.addFault({ method: 'GET', path: '/partner/v1/roles', kind: 'error', status: 503 });
      const response = await h.api('GET', '/partner/v1/roles');
      expect([response.status, response.body.error.code]).toEqual([503, 'request_timeout']);
    });

    it('DESIGN sandbox: is used once by default, then requests pass', async () => {
      const id = await submitted();
      await h.control.addFault({ method: 'POST', path: APPROVE, kind: 'error' });
      expect((await h.api('POST', `/partner/v1/applications/${id}/approve`, { body: {} })).status).toBe(500);
      expect((await h.api('POST', `/partner/v1/applications/${id}/approve`, { body: {} })).status).toBe(200);
    });

    it('DESIGN sandbox: is used `times` times', async () => {
      await h.control.addFault({ method: 'GET', path: '/partner/v1/roles', kind: 'error', times: 2 });
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await h.api('GET', '/partner/v1/roles')).status);
      expect(statuses).toEqual([500, 500, 200]);
    });

    it('DESIGN sandbox: with times null it matches forever, until the faults are cleared', async () => {
      await h.control.addFault({ method: 'GET', path: '/partner/v1/roles', kind: 'error', times: null });
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await h.api('GET', '/partner/v1/roles')).status);
      await h.control.clearFaults();
      statuses.push((await h.api('GET', '/partner/v1/roles')).status);
      expect(statuses).toEqual([500, 500, 500, 200]);
    });

    it('DESIGN sandbox: matches by method: a fault on POST leaves GET alone', async () => {
      await h.control.addFault({ method: 'POST', path: '/partner/v1/roles', kind: 'error' });
      expect((await h.api('GET', '/partner/v1/roles')).status).toBe(200);
    });

    it('DESIGN sandbox: a `*` stands for exactly one path segment', async () => {
      await h.control.addFault({ method: 'GET', path: '/partner/v1/*', kind: 'error', times: null });
      expect((await h.api('GET', '/partner/v1/roles')).status).toBe(500);
      expect((await h.api('GET', '/partner/v1/applications/activity_logs')).status).toBe(200);
    });
  });

  describe('when an apply_then_error fault matches', () => {
    it('DESIGN sandbox: applies the write, then answers 500 api_error; the ledger says applied', async () => {
      const id = await submitted();
      await h.control.addFault({ method: 'POST', path: APPROVE, kind: 'apply_then_error' });
      const response = await h.api('POST', `/partner/v1/applications/${id}/approve`, { body: {} });
      expect(response.status).toBe(500);
      expect(response.body.error).toMatchObject({ code: 'api_error', error_id: expect.any(String) });
      expect(await statusOf(id)).toBe('approved');
      expect((await h.control.ledger()).writes).toEqual([
        expect.objectContaining({ applied: true, status: 500 }),
      ]);
    });
  });

  describe('when an apply_then_timeout fault matches', () => {
    it('DESIGN sandbox: applies the write and never answers; the ledger says applied with no status', async () => {
      const id = await submitted();
      await h.control.addFault({ method: 'POST', path: APPROVE, kind: 'apply_then_timeout' });
      const token = await h.token();
      const outcome = await fetch(`${h.sandbox.url}/partner/v1/applications/${id}/approve`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{}',
        signal: AbortSignal.timeout(300),
      }).then(
        () => 'answered',
        (error: Error) => error.name,
      );
      expect(outcome).toBe('TimeoutError');
      expect(await statusOf(id)).toBe('approved');
      expect((await h.control.ledger()).writes).toEqual([
        expect.objectContaining({ applied: true, status: null }),
      ]);
    });

    it('DESIGN sandbox: close() ends the hanging connection', async () => {
      const own = await startSandbox({ port: 0 });
      const control = createSandboxControl(own.url);
      const [application] = await control.addRecords('applications', [{ status: 'submitted' }]);
      await control.addFault({ method: 'POST', path: APPROVE, kind: 'apply_then_timeout' });
      const auth = await fetch(`${own.url}/partner/v1/authenticate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ access_key: 'sandbox-access-key', secret_key: 'sandbox-secret-key' }),
      });
      const { token } = (await auth.json()) as { token: string };
      const pending = fetch(`${own.url}/partner/v1/applications/${application?.id}/approve`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      }).then(
        () => 'answered',
        () => 'connection ended',
      );
      await eventually(async () => ((await control.ledger()).writes.length > 0 ? true : undefined));
      await own.close();
      expect(await pending).toBe('connection ended');
    });
  });

  describe('when a delay fault matches', () => {
    it('DESIGN sandbox: proceeds after the delay: a client that gave up first may still see its write applied', async () => {
      const id = await submitted();
      await h.control.addFault({ method: 'POST', path: APPROVE, kind: 'delay', delay_ms: 400 });
      const token = await h.token();
      const outcome = await fetch(`${h.sandbox.url}/partner/v1/applications/${id}/approve`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(50),
      }).then(
        () => 'answered',
        (error: Error) => error.name,
      );
      expect(outcome).toBe('TimeoutError');
      const [write] = await eventually(async () => {
        const { writes } = await h.control.ledger();
        return writes.length > 0 ? writes : undefined;
      });
      expect(write).toMatchObject({ applied: true, status: 200 });
      expect(await statusOf(id)).toBe('approved');
    });

    it('DESIGN sandbox: past max_processing_ms answers 503 request_timeout and never applies the write', async () => {
      const id = await submitted();
      await h.control.setConfig({ max_processing_ms: 300 });
      await h.control.addFault({ method: 'POST', path: APPROVE, kind: 'delay', delay_ms: 600 });
      const started = Date.now();
      const response = await h.api('POST', `/partner/v1/applications/${id}/approve`, { body: {} });
      expect([response.status, response.body.error.code]).toEqual([503, 'request_timeout']);
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      // Nothing lands later either.
      await new Promise((r) => setTimeout(r, 500));
      expect(await statusOf(id)).toBe('submitted');
      expect((await h.control.ledger()).writes).toEqual([
        expect.objectContaining({ applied: false, status: 503 }),
      ]);
    });

    it('DESIGN sandbox: below max_processing_ms applies the write when the delay ends', async () => {
      const id = await submitted();
      await h.control.setConfig({ max_processing_ms: 1000 });
      await h.control.addFault({ method: 'POST', path: APPROVE, kind: 'delay', delay_ms: 300 });
      const response = await h.api('POST', `/partner/v1/applications/${id}/approve`, { body: {} });
      expect(response.status).toBe(200);
      expect(await statusOf(id)).toBe('approved');
    });

    it('DESIGN sandbox: max_processing_ms defaults to 30000 and refuses a non-positive value', async () => {
      expect((await h.control.setConfig({})).max_processing_ms).toBe(30_000);
      const response = await fetch(`${h.sandbox.url}/__sandbox/config`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ max_processing_ms: 0 }),
      });
      expect(response.status).toBe(400);
    });

    it('DESIGN sandbox: answers normally after the delay', async () => {
      await h.control.addFault({ method: 'GET', path: '/partner/v1/roles', kind: 'delay', delay_ms: 20 });
      expect((await h.api('GET', '/partner/v1/roles')).status).toBe(200);
    });
  });

  describe('when writes reach the sandbox', () => {
    it('DESIGN sandbox: the ledger records method, path, request_id, body, applied, status and time of each', async () => {
      const id = await submitted();
      const response = await h.api('POST', `/partner/v1/applications/${id}/decline`, {
        body: { reason: 'x' },
        headers: { 'x-request-id': 'decline-1' },
      });
      expect(response.status).toBe(200);
      expect((await h.control.ledger()).writes).toEqual([
        {
          method: 'POST',
          path: `/partner/v1/applications/${id}/decline`,
          request_id: 'decline-1',
          body: { reason: 'x' },
          applied: true,
          status: 200,
          at: expect.stringMatching(/Z$/),
        },
      ]);
    });

    it('DESIGN sandbox: rejected writes are in the ledger as not applied', async () => {
      const [application] = await h.control.addRecords('applications', [{ status: 'approved' }]);
      await h.api('POST', `/partner/v1/applications/${application?.id}/approve`, { body: {} });
      await h.api('POST', `/partner/v1/applications/${application?.id}/approve`, { token: 'bad', body: {} });
      expect((await h.control.ledger()).writes.map((w) => [w.applied, w.status])).toEqual([
        [false, 409],
        [false, 401],
      ]);
    });

    it('DESIGN sandbox: reads and authentication are not in the ledger', async () => {
      await h.api('GET', '/partner/v1/roles');
      expect((await h.control.ledger()).writes).toEqual([]);
    });
  });
});
