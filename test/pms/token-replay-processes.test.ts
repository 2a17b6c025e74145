import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSandboxControl, startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';
import { spawnCli, stopProcesses, storesEnv } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { freePort } from '../support/free-port.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { buildSecret, send } from '../receiver/webhooks.js';

/**
 * Issue 34 as deployed: two `rentbridge receiver` processes (each its own OS process, sharing only
 * PostgreSQL) serve the customer-token endpoint; `beta` has a scoped Partner API key of its own,
 * `acme` none. A signed request works once, on whichever process it reaches, for as long as its
 * signature is accepted; nothing secret reaches either process's log.
 */
const WAIT = { timeout: 120_000, interval: 500 };
/** Short, so the test can replay a copy at the far end of its window. */
const TOLERANCE_SECONDS = 12;
const BETA = { access_key: 'beta-replay-access', secret_key: 'beta-replay-secret-0123456789' };
const secrets = { acme: buildSecret(), beta: buildSecret() };
const path = (source: string) => `/pms/${source}/customer-access-tokens`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('customer-token requests on two receiver processes', () => {
  let database: TestDatabase;
  let kafka: TestKafka;
  let sandbox: Sandbox;
  const children: ChildProcess[] = [];
  const logs: string[] = [];
  const urls: string[] = [];
  let acmeCustomer: string;
  let betaCustomer: string;
  const issued: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    kafka = createTestKafka();
    await kafka.createTopics();
    sandbox = await startSandbox({ port: 0 });
    const control = createSandboxControl(sandbox.url);
    await control.createKey({ ...BETA, owner_ids: ['owner-beta'] });
    const [acme, beta] = await control.addRecords('customers', [
      {
        first_name: 'Ada',
        last_name: 'A',
        email: 'ada@example.com',
        phone: '5551230001',
        owner_id: 'owner-acme',
      },
      {
        first_name: 'Bo',
        last_name: 'B',
        email: 'bo@example.com',
        phone: '5551230002',
        owner_id: 'owner-beta',
      },
    ]);
    acmeCustomer = String(acme!.id);
    betaCustomer = String(beta!.id);
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      urls.push(`http://127.0.0.1:${port}`);
      logs.push('');
      const child = spawnCli(
        ['receiver'],
        {
          ...storesEnv(database, kafka),
          PARTNER_API_URL: sandbox.url,
          PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [secrets.acme], beta: [secrets.beta] }),
          PMS_PARTNER_KEYS: JSON.stringify({ beta: { ...BETA, scoped: true } }),
          // acme acts with the deployment key beside beta's own: the sources share by the operator's word.
          PMS_SHARED_PARTNER_KEY: 'trusted',
          WEBHOOK_TOLERANCE_SECONDS: String(TOLERANCE_SECONDS),
          HTTP_PORT: String(port),
          LOG_LEVEL: 'debug',
        },
        (text) => (logs[i] += text),
      );
      children.push(child);
    }
    for (const [i, url] of urls.entries()) {
      await vi.waitFor(async () => {
        expect(children[i]!.exitCode, `receiver ${i} exited:\n${logs[i]}`).toBeNull();
        expect((await fetch(`${url}/readyz`)).status).toBe(200);
      }, WAIT);
    }
  }, 180_000);

  afterAll(async () => {
    await stopProcesses(children);
    await sandbox?.close();
    await kafka?.close();
    await database?.drop();
  }, 60_000);

  const [one, two] = [() => urls[0]!, () => urls[1]!];
  const tokenSlots = async () =>
    Number(
      (
        await database.sql.query<{ n: string }>(
          `SELECT count(*) AS n FROM rate_budget_slots WHERE budget = 'issue-access-token'`,
        )
      ).rows[0]?.n,
    );

  describe('when a signed request is replayed on the other process', () => {
    it('is refused 409 in the error envelope, and the Partner API is not asked again', async () => {
      const captured = {
        secret: secrets.beta,
        webhookId: `msg_replay_${Date.now()}`,
        timestamp: Math.floor(Date.now() / 1000),
      };
      const first = await send(one(), path('beta'), { customer_id: betaCustomer }, captured);
      expect(first.status).toBe(200);
      issued.push(String(first.json.token));
      const before = await tokenSlots();
      for (const url of [two(), one()]) {
        const again = await send(url, path('beta'), { customer_id: betaCustomer }, captured);
        expect(again.status).toBe(409);
        expect(again.json).toEqual({
          error: {
            status: 409,
            code: 'replayed_request',
            message: expect.stringMatching(/sign a new request/),
            request_id: expect.any(String),
          },
        });
      }
      // Every call to issue_access_token takes a slot of the token budget: none was taken.
      expect(await tokenSlots()).toBe(before);
    });
  });

  describe('when the copy comes at the far end of the window its signature is accepted in', () => {
    it('is still refused, until the signature itself is too old', async () => {
      // Signed for a moment ahead of now: accepted from now until that moment plus the tolerance,
      // nearly twice the tolerance after the first copy was answered.
      const timestamp = Math.floor(Date.now() / 1000) + TOLERANCE_SECONDS - 2;
      const captured = { secret: secrets.beta, webhookId: `msg_window_${Date.now()}`, timestamp };
      const first = await send(two(), path('beta'), { customer_id: betaCustomer }, captured);
      expect(first.status).toBe(200);
      issued.push(String(first.json.token));
      // Past the tolerance since the first copy, still inside the signature's window.
      await sleep((TOLERANCE_SECONDS + 4) * 1000);
      expect(Math.abs(Date.now() / 1000 - timestamp)).toBeLessThan(TOLERANCE_SECONDS - 1);
      const late = await send(one(), path('beta'), { customer_id: betaCustomer }, captured);
      expect(late.status).toBe(409);
      // Once the signature is outside the window, the signature check refuses it first.
      await sleep((timestamp + TOLERANCE_SECONDS + 1 - Date.now() / 1000) * 1000);
      const expired = await send(one(), path('beta'), { customer_id: betaCustomer }, captured);
      expect(expired.status).toBe(401);
    }, 60_000);
  });

  describe('when each source asks for a token with the key that acts for it', () => {
    it("beta's scoped key gets 404 outside its scope; acme's deployment key reaches every customer", async () => {
      const other = await send(two(), path('beta'), { customer_id: acmeCustomer }, { secret: secrets.beta });
      expect(other.status).toBe(404);
      expect(other.json).toMatchObject({ error: { status: 404, code: 'not_found' } });
      const acme = await send(two(), path('acme'), { customer_id: betaCustomer }, { secret: secrets.acme });
      expect(acme.status).toBe(200);
      issued.push(String(acme.json.token));
    });
  });

  describe('when both processes have logged all of it at debug level and /metrics is read', () => {
    it('shows which key each source uses and never a secret, a key or a token', async () => {
      const metrics = await (await fetch(`${one()}/metrics`)).text();
      expect(metrics).toContain('rentbridge_source_partner_key{source="beta",key="own"} 1');
      expect(metrics).toContain('rentbridge_source_partner_key{source="acme",key="deployment"} 1');
      const out = logs.join('\n');
      expect(out).toMatch(/customer token request replayed: refused/);
      expect(issued).toHaveLength(3);
      for (const secret of [BETA.secret_key, 'sandbox-secret-key', secrets.acme, secrets.beta, ...issued]) {
        expect(out, 'a secret was logged').not.toContain(secret);
        expect(metrics).not.toContain(secret);
      }
      expect(metrics).not.toContain(BETA.access_key);
    });
  });
});
