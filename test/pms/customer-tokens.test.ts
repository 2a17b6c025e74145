import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomerTokens, TOKEN_BUDGET_NAME } from '../../src/pms/customer-token-router.js';
import { createHttpApp } from '../../src/http/http-app.js';
import { createLogger } from '../../src/logger.js';
import { registry } from '../../src/metrics.js';
import { createSandboxControl, startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { buildSecret, send } from '../receiver/webhooks.js';

const logger = createLogger({ level: 'silent' });
const acme = buildSecret();
const beta = buildSecret();
const PATH = '/pms/acme/customer-access-tokens';
const BETA_PATH = '/pms/beta/customer-access-tokens';
/** beta's own Partner API key, scoped to its owner (spec 5.9); acme has none (the deployment key). */
const BETA_KEY = { access_key: 'beta-access-key', secret_key: 'beta-secret-key', owner_ids: ['owner-beta'] };

/** One rentbridge process's token endpoint, counting the issue_access_token calls it sends. */
async function startProcess(database: TestDatabase, sandbox: Sandbox) {
  const sent = { issue: 0 };
  const counting: typeof fetch = (input, init) => {
    if (String(input instanceof Request ? input.url : input).includes('/issue_access_token')) sent.issue++;
    return fetch(input, init);
  };
  const tokens = createCustomerTokens({
    db: database.db,
    partnerUrl: sandbox.url,
    logger,
    fetch: counting,
    // Room for a cold first request (authenticate, then issue) on a loaded machine.
    waitMs: 5000,
    config: {
      PARTNER_ACCESS_KEY: 'sandbox-access-key',
      PARTNER_SECRET_KEY: 'sandbox-secret-key',
      PARTNER_ENHANCED_SECURITY: false,
      PARTNER_TIMEOUT_MS: 2000,
      PARTNER_TOKEN_RATE_LIMIT_PER_MINUTE: 2500,
      PMS_WEBHOOK_SECRETS: { acme: [acme], beta: [beta] },
      PMS_PARTNER_KEYS: {
        beta: { access_key: BETA_KEY.access_key, secret_key: BETA_KEY.secret_key, scoped: true },
      },
      WEBHOOK_TOLERANCE_SECONDS: 300,
    },
  });
  const app = createHttpApp({
    logger,
    mounts: [{ path: '/pms', router: tokens.router }],
    ready: async () => ({}),
  });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await tokens.close();
    },
  };
}

describe('customer access tokens', () => {
  let sandbox: Sandbox;
  let control: SandboxControl;
  let database: TestDatabase;
  let one: Awaited<ReturnType<typeof startProcess>>;
  let two: Awaited<ReturnType<typeof startProcess>>;
  let customerId: string;
  /** A customer of beta's owner: inside beta's scoped key. */
  let betaCustomerId: string;

  beforeAll(async () => {
    [sandbox, database] = await Promise.all([startSandbox({ port: 0 }), createTestDatabase()]);
    control = createSandboxControl(sandbox.url);
    [one, two] = await Promise.all([startProcess(database, sandbox), startProcess(database, sandbox)]);
    await control.createKey(BETA_KEY);
    const [customer, betas] = await control.addRecords('customers', [
      {
        first_name: 'Ada',
        last_name: 'Lovelace',
        email: 'ada@example.com',
        phone: '5551234567',
        owner_id: 'owner-acme',
      },
      {
        first_name: 'Bo',
        last_name: 'Beta',
        email: 'bo@example.com',
        phone: '5557654321',
        owner_id: 'owner-beta',
      },
    ]);
    customerId = String(customer!.id);
    betaCustomerId = String(betas!.id);
  });
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await sandbox?.close();
    await database?.drop();
  });

  const slotsOf = async (budget: string) =>
    Number(
      (
        await database.sql.query<{ n: string }>(
          'SELECT count(*) AS n FROM rate_budget_slots WHERE budget = $1',
          [budget],
        )
      ).rows[0]?.n,
    );

  describe('when a PMS signs a token request for a customer', () => {
    it('answers a customer-level token, spending the token budget, not the 650/min one', async () => {
      const res = await send(one.url, PATH, { customer_id: customerId }, { secret: acme });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ customer_id: customerId, token: expect.any(String) });
      expect(res.headers.get('cache-control')).toBe('no-store');
      const claims = JSON.parse(
        Buffer.from(String(res.json.token).split('.')[1]!, 'base64url').toString(),
      ) as {
        customer_id?: unknown;
      };
      expect(String(claims.customer_id)).toBe(customerId);
      expect(await slotsOf(TOKEN_BUDGET_NAME)).toBeGreaterThan(0);
      expect(await slotsOf('partner-api')).toBe(0);
      expect(await registry.getSingleMetricAsString('rentbridge_customer_tokens_total')).toContain(
        'rentbridge_customer_tokens_total{source="acme",result="issued"} 1',
      );
    });
  });

  describe('when the request is not signed by the source', () => {
    it('answers 401 in the error envelope and asks the Partner API nothing', async () => {
      const before = one.sent.issue;
      const res = await send(one.url, PATH, { customer_id: customerId }, { secret: buildSecret() });
      expect(res.status).toBe(401);
      expect(res.json).toMatchObject({ error: { status: 401, code: 'unauthenticated' } });
      expect(one.sent.issue).toBe(before);
    });
  });

  describe('when the customer does not exist', () => {
    it('answers 404', async () => {
      const res = await send(one.url, PATH, { customer_id: '999999' }, { secret: acme });
      expect(res.status).toBe(404);
    });
  });

  describe('when the body names no customer', () => {
    it('answers 422 naming the field', async () => {
      const res = await send(one.url, PATH, { customer: 1 }, { secret: acme });
      expect(res.status).toBe(422);
      expect(JSON.stringify(res.json)).toContain('customer_id');
    });
  });

  describe('when the same signed request is sent again', () => {
    it('is refused with 409 by any receiver process, which asks the Partner API nothing', async () => {
      // The captured request exactly: same id, same timestamp, same body, so the same signature.
      const captured = {
        secret: acme,
        webhookId: `msg_once_${Date.now()}`,
        timestamp: Math.floor(Date.now() / 1000),
      };
      const first = await send(one.url, PATH, { customer_id: customerId }, captured);
      expect(first.status).toBe(200);
      const before = two.sent.issue;
      for (const process of [two, one]) {
        const again = await send(process.url, PATH, { customer_id: customerId }, captured);
        expect(again.status).toBe(409);
        expect(again.json).toMatchObject({
          error: { status: 409, code: 'replayed_request', request_id: expect.any(String) },
        });
        expect(String((again.json.error as { message: string }).message)).toMatch(/sign a new request/);
      }
      expect(two.sent.issue).toBe(before);
      // A new signature (new webhook-id) for the same customer is a new request.
      const fresh = await send(two.url, PATH, { customer_id: customerId }, { secret: acme });
      expect(fresh.status).toBe(200);
    });

    it('refuses every copy but one when the copies arrive at once on two processes', async () => {
      const webhookId = `msg_race_${Date.now()}`;
      const timestamp = Math.floor(Date.now() / 1000);
      const copies = await Promise.all(
        [one, two, one, two].map((p) =>
          send(p.url, PATH, { customer_id: customerId }, { secret: acme, webhookId, timestamp }),
        ),
      );
      expect(copies.map((c) => c.status).sort()).toEqual([200, 409, 409, 409]);
    });
  });

  describe('when a signed request did not get a token', () => {
    it('may be sent again with the same signature', async () => {
      const webhookId = `msg_missing_${Date.now()}`;
      const timestamp = Math.floor(Date.now() / 1000);
      const options = { secret: acme, webhookId, timestamp };
      expect((await send(one.url, PATH, { customer_id: '999998' }, options)).status).toBe(404);
      expect((await send(two.url, PATH, { customer_id: '999998' }, options)).status).toBe(404);
    });
  });

  describe('when a source has a scoped Partner API key of its own', () => {
    it("gets a token for a customer in its scope and 404 for another source's customer", async () => {
      const tokenSlots = await slotsOf(TOKEN_BUDGET_NAME);
      const own = await send(one.url, BETA_PATH, { customer_id: betaCustomerId }, { secret: beta });
      expect(own.status).toBe(200);
      expect(own.json).toMatchObject({ customer_id: betaCustomerId, token: expect.any(String) });

      const other = await send(one.url, BETA_PATH, { customer_id: customerId }, { secret: beta });
      expect(other.status).toBe(404);
      expect(other.json).toMatchObject({ error: { status: 404, code: 'not_found' } });
      expect(String((other.json.error as { message: string }).message)).toMatch(/scope/);

      // acme, without a key of its own, still reaches every customer with the deployment key.
      const acmeOwn = await send(one.url, PATH, { customer_id: betaCustomerId }, { secret: acme });
      expect(acmeOwn.status).toBe(200);

      // beta's key, like the deployment's, spends the one token budget of the IP (its
      // authentication included), never the 650/min one.
      expect(await slotsOf(TOKEN_BUDGET_NAME)).toBeGreaterThanOrEqual(tokenSlots + 4);
      expect(await slotsOf('partner-api')).toBe(0);
    });
  });

  describe('when the Partner API throttles the endpoint', () => {
    it('answers 429 with Retry-After, and every process holds back until then', async () => {
      await control.setConfig({ issue_token_rate_limit_per_minute: 1 });
      // The sandbox's window may already hold a request of the tests above.
      let throttled = await send(one.url, PATH, { customer_id: customerId }, { secret: acme });
      if (throttled.status === 200)
        throttled = await send(one.url, PATH, { customer_id: customerId }, { secret: acme });
      expect(throttled.status).toBe(429);
      expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);

      // Another process on the same IP: the pause is in PostgreSQL, so it sends nothing.
      const before = two.sent.issue;
      const other = await send(two.url, PATH, { customer_id: customerId }, { secret: acme });
      expect(other.status).toBe(429);
      expect(Number(other.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(two.sent.issue).toBe(before);
    });
  });
});
