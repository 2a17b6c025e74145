import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import {
  PartnerApiError,
  PartnerNetworkError,
  PartnerTimeoutError,
  createPartnerClient,
  type PartnerClientDeps,
  type PartnerRecord,
} from '../../src/partner/index.js';
import { createSandboxControl, startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';

const logger = createLogger({ level: 'silent' });
let sandbox: Sandbox;
let control: SandboxControl;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  control = createSandboxControl(sandbox.url);
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(async () => {
  await control.reset();
});

/** A client of the sandbox whose fetch records every request it sends. */
function buildClient(overrides: Partial<PartnerClientDeps> = {}) {
  const sent: Array<{ method: string; url: string; headers: Headers; status: number }> = [];
  const client = createPartnerClient({
    baseUrl: sandbox.url,
    accessKey: 'sandbox-access-key',
    secretKey: 'sandbox-secret-key',
    logger,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      sent.push({
        method: init?.method ?? 'GET',
        url: String(input),
        headers: new Headers(init?.headers),
        status: res.status,
      });
      return res;
    },
    ...overrides,
  });
  const calls = (path: string) => sent.filter((s) => new URL(s.url).pathname === path);
  return { client, sent, calls };
}

function buildApplications(
  count: number,
  overrides: Partial<PartnerRecord> = {},
): Array<Record<string, unknown>> {
  return Array.from({ length: count }, (_, i) => ({
    id: i + 1,
    status: 'submitted',
    custom_field: `x${i + 1}`,
    ...overrides,
  }));
}

/**
 * The client's clock: records every wait between attempts and returns at once, so the back-off
 * is asserted, not slept. Jitter is drawn as 0.25 of its range.
 */
function fakeClock() {
  const waits: number[] = [];
  return {
    waits,
    deps: {
      sleep: (ms: number) => {
        waits.push(ms);
        return Promise.resolve();
      },
      random: () => 0.25,
    } satisfies Partial<PartnerClientDeps>,
  };
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe('partner client', () => {
  describe('when it lists a collection', () => {
    it('parses the envelope and keeps fields the spec does not show', async () => {
      await control.addRecords('applications', buildApplications(3));
      const { client } = buildClient();
      const res = await client.listPage('applications', { per_page: 2 });
      expect(res.data).toMatchObject({ current_page: 1, page_count: 2, total_count: 3, has_more: true });
      expect(res.data.items[0]).toMatchObject({ id: 3, custom_field: 'x3' });
    });

    it('walks every page with per_page 1000 by default', async () => {
      await control.addRecords('applications', buildApplications(5));
      const { client, calls } = buildClient();
      const records = await collect(client.records('applications'));
      expect(records.map((r) => r.id)).toEqual([5, 4, 3, 2, 1]);
      expect(new URL(calls('/partner/v1/applications')[0]!.url).searchParams.get('per_page')).toBe('1000');
    });
  });

  describe('when a record is deleted while paging', () => {
    it('does not miss the record that slid onto a page already read', async () => {
      await control.addRecords('applications', buildApplications(9));
      const { client } = buildClient();
      const ids: unknown[] = [];
      let pageNo = 0;
      for await (const page of client.pages('applications', { per_page: 3 })) {
        ids.push(...page.data.items.map((r) => r.id));
        // After page 1 (9, 8, 7): deleting 8 moves 6 onto page 1; a naive walk would skip it.
        if (++pageNo === 1) await control.deleteRecord('applications', 8);
      }
      expect(ids).toContain(6);
      expect([...ids].sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });
  });

  describe('when records are created while paging', () => {
    it('yields no record twice', async () => {
      await control.addRecords('applications', buildApplications(6));
      const { client } = buildClient();
      const ids: unknown[] = [];
      let pageNo = 0;
      for await (const page of client.pages('applications', { per_page: 2 })) {
        ids.push(...page.data.items.map((r) => r.id));
        if (++pageNo === 1) await control.addRecords('applications', [{ id: 100 }, { id: 101 }]);
      }
      expect(new Set(ids).size).toBe(ids.length);
      for (const id of [1, 2, 3, 4, 5, 6]) expect(ids).toContain(id);
    });
  });

  describe('when the caller gives a request id', () => {
    it('sends it and reports the id the API answered with', async () => {
      const { client, calls } = buildClient();
      const res = await client.listPage('applications', {}, { requestId: 'decision_abc.1' });
      expect(res.requestId).toBe('decision_abc.1');
      expect(calls('/partner/v1/applications')[0]!.headers.get('x-request-id')).toBe('decision_abc.1');
    });

    it('replaces an id that does not follow spec 7.3', async () => {
      const { client } = buildClient();
      const res = await client.listPage('applications', {}, { requestId: 'not valid!' });
      expect(res.requestId).toMatch(/^[0-9a-f-]{36}$/);
    });
  });

  describe('when the API rejects a call', () => {
    it('throws a PartnerApiError with code, status, errors and the answered request id', async () => {
      const { client } = buildClient();
      const error = await client
        .listPage('applications', { per_page: 0 }, { requestId: 'bad-page' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PartnerApiError);
      expect(error).toMatchObject({
        status: 400,
        code: 'validation_error',
        requestId: 'bad-page',
        retriable: false,
      });
      expect((error as PartnerApiError).errors?.length).toBeGreaterThan(0);
    });
  });

  describe('when many calls start without a token', () => {
    it('authenticates once and reuses the token', async () => {
      const { client, calls } = buildClient();
      await Promise.all(Array.from({ length: 5 }, () => client.listPage('applications')));
      await client.bankAccounts();
      expect(calls('/partner/v1/authenticate')).toHaveLength(1);
    });
  });

  describe('when the token was revoked', () => {
    it('renews it once and repeats the call', async () => {
      const { client, calls } = buildClient();
      await client.listPage('applications');
      await control.revokeKey('sandbox-access-key');
      await control.createKey({ access_key: 'sandbox-access-key', secret_key: 'sandbox-secret-key' });
      await control.addRecords('applications', buildApplications(1));
      const res = await client.approveApplication(1, { reason: 'ok' }, { requestId: 'approve-1' });
      expect(res.status).toBeLessThan(300);
      expect(calls('/partner/v1/authenticate')).toHaveLength(2);
      expect(calls('/partner/v1/applications/1/approve').map((c) => c.status)).toEqual([401, res.status]);
    });
  });

  describe('when enhanced security is on', () => {
    it('sends X-Access-Token, without which the API answers 401', async () => {
      await control.setConfig({ enhanced_security: true });
      const plain = buildClient();
      await expect(plain.client.listPage('applications')).rejects.toMatchObject({
        status: 401,
        code: 'unauthenticated',
      });
      const enhanced = buildClient({ enhancedSecurity: true });
      await expect(enhanced.client.listPage('applications')).resolves.toMatchObject({ status: 200 });
      expect(enhanced.calls('/partner/v1/applications')[0]!.headers.get('x-access-token')).toBe(
        'sandbox-access-key',
      );
    });
  });

  describe('when a GET meets 503 and 500', () => {
    it('retries until it succeeds', async () => {
      await control.addFault({
        method: 'GET',
        path: '/partner/v1/applications',
        kind: 'error',
        status: 503,
        code: 'request_timeout',
        times: 1,
      });
      await control.addFault({
        method: 'GET',
        path: '/partner/v1/applications',
        kind: 'error',
        status: 500,
        code: 'api_error',
        times: 1,
      });
      const clock = fakeClock();
      const { client, calls } = buildClient(clock.deps);
      await expect(client.listPage('applications')).resolves.toMatchObject({ status: 200 });
      expect(calls('/partner/v1/applications').map((c) => c.status)).toEqual([503, 500, 200]);
      // 0.5 s doubled, plus up to 1 s of jitter (0.25 of it here).
      expect(clock.waits).toEqual([500 + 250, 1000 + 250]);
    });
  });

  describe('when a storm of 429s hits a GET', () => {
    it('waits Retry-After, backs off and succeeds within five attempts', async () => {
      await control.addFault({
        method: 'GET',
        path: '/partner/v1/applications',
        kind: 'error',
        status: 429,
        code: 'rate_limited',
        times: 3,
      });
      const clock = fakeClock();
      const { client, calls } = buildClient(clock.deps);
      await expect(client.listPage('applications')).resolves.toMatchObject({ status: 200 });
      expect(calls('/partner/v1/applications').map((c) => c.status)).toEqual([429, 429, 429, 200]);
      // Retry-After (the sandbox says 1 s) exactly, then doubled plus up to 1 s of jitter.
      expect(clock.waits).toEqual([1000, 2000 + 250, 4000 + 250]);
    });

    it('gives up after five attempts, never waiting less than Retry-After nor more than 60 s', async () => {
      await control.addFault({
        method: 'GET',
        path: '/partner/v1/applications',
        kind: 'error',
        status: 429,
        code: 'rate_limited',
        times: null,
      });
      const clock = fakeClock();
      const statuses: number[] = [];
      const { client } = buildClient({
        ...clock.deps,
        // The sandbox's 429s, asking for 40 s instead of 1 s.
        fetch: async (input, init) => {
          const res = await fetch(input, init);
          if (new URL(String(input)).pathname === '/partner/v1/applications') statuses.push(res.status);
          if (res.status !== 429) return res;
          const headers = new Headers(res.headers);
          headers.set('retry-after', '40');
          return new Response(await res.text(), { status: 429, headers });
        },
      });
      const error = await client.listPage('applications').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PartnerApiError);
      expect(error).toMatchObject({ status: 429, code: 'rate_limited', retryAfterSeconds: 40 });
      expect(statuses).toEqual([429, 429, 429, 429, 429]);
      expect(clock.waits).toEqual([40_000, 60_000, 60_000, 60_000]);
    });
  });

  describe('when a write fails with a 5xx', () => {
    it('reports it and never repeats the write', async () => {
      await control.addRecords('applications', buildApplications(1));
      await control.addFault({
        method: 'POST',
        path: '/partner/v1/applications/1/approve',
        kind: 'apply_then_error',
        status: 500,
        code: 'api_error',
        times: 1,
      });
      const { client } = buildClient();
      const error = await client.approveApplication(1, {}, { requestId: 'cmd-1' }).catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 500, code: 'api_error', requestId: 'cmd-1', retriable: true });
      expect((error as PartnerApiError).errorSignature).toMatch(/^sig_/);
      const writes = (await control.ledger()).writes.filter((w) => w.request_id === 'cmd-1');
      expect(writes).toHaveLength(1);
    });
  });

  describe('when a write gets no answer in time', () => {
    it('throws a PartnerTimeoutError and does not repeat it', async () => {
      await control.addRecords('enrollments', [{ id: 7, status: 'active' }]);
      await control.addFault({
        method: 'POST',
        path: '/partner/v1/enrollments/7/report_rental_payments',
        kind: 'apply_then_timeout',
        times: 1,
      });
      const { client } = buildClient();
      const body = { rental_payments: [{ amount_cents: 120_000, paid_on: '2026-11-01' }] };
      const error = await client
        .reportRentalPayments(7, body, { requestId: 'pay-1', timeoutMs: 300 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PartnerTimeoutError);
      expect(error).toMatchObject({ requestId: 'pay-1' });
      expect((await control.ledger()).writes.filter((w) => w.request_id === 'pay-1')).toHaveLength(1);
    });
  });

  describe('when the API cannot be reached', () => {
    it('throws a PartnerNetworkError after five attempts of a GET', async () => {
      let attempts = 0;
      const clock = fakeClock();
      const { client } = buildClient({
        ...clock.deps,
        baseUrl: 'http://127.0.0.1:1',
        fetch: async (input, init) => {
          attempts++;
          return fetch(input, init);
        },
      });
      await expect(client.listPage('applications')).rejects.toBeInstanceOf(PartnerNetworkError);
      // The five attempts are those of authenticate, which fails first.
      expect(attempts).toBe(5);
      expect(clock.waits).toEqual([500 + 250, 1000 + 250, 2000 + 250, 4000 + 250]);
    });
  });
});

describe('a refusal by the platform, in the log (issue 54: the demo read as failing)', () => {
  it('is a debug line, not a warning; a call the platform fails to answer is still a warning', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = {
      write(chunk: string) {
        for (const line of chunk.split('\n').filter(Boolean)) lines.push(JSON.parse(line) as never);
      },
    };
    const logged = createLogger({ level: 'debug' }, sink);
    const { client } = buildClient({ logger: logged });
    // 404: no such application, the platform's definitive answer (the demo sends such on purpose).
    await expect(
      client.approveApplication(999_999_999, { decision_id: 'd-1' } as never),
    ).rejects.toBeInstanceOf(PartnerApiError);
    const about = (msg: string) => lines.filter((l) => l.msg === msg);
    expect(about('partner call failed')).toEqual([]);
    expect(about('partner call refused')[0]).toMatchObject({
      status: 404,
      code: 'not_found',
      level: 'debug',
    });
    // No answer at all: someone may need to look.
    const { client: unreachable } = buildClient({ logger: logged, baseUrl: 'http://127.0.0.1:9' });
    await expect(unreachable.bankAccounts()).rejects.toBeInstanceOf(PartnerNetworkError);
    expect(about('partner call failed')[0]).toMatchObject({ level: 'warn' });
  }, 60_000);
});
