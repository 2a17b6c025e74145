import type { Server } from 'node:http';
import express from 'express';
import type { Producer } from 'kafkajs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAuditChain } from '../../src/audit/audit-verify.js';
import { getDeadLetter } from '../../src/dead-letters/dead-letter-repository.js';
import { requestId } from '../../src/http/request-id.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createLogger } from '../../src/logger.js';
import { createOpsRouter, type OpsRouter } from '../../src/ops/ops-router.js';
import { buildDecisionLetter, seedLetter } from '../dead-letters/build-dead-letter.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import { freePort } from '../support/free-port.js';
import type { TestKafka } from '../support/kafka.js';
import { ROLE_MAP, startTestProvider, type TestProvider } from '../support/oidc-provider.js';
import { closeServer, skipWithoutChromium } from './browser.js';
import { rentbridgeVersion } from '../../src/version.js';

/**
 * #44: single sign-on against a real OpenID provider (oidc-provider), driven in Chromium: roles
 * from the provider's groups, the audit's actor the signed-in person, sign-out, expiry, CSRF.
 */
describe.skipIf(skipWithoutChromium)('console sign-in with OpenID Connect', () => {
  const app = useApp({ topics: [TOPICS.applicationDecisions], producer: true, browser: true });
  let database: TestDatabase;
  let kafka: TestKafka;
  let producer: Producer;
  let provider: TestProvider;
  let router: OpsRouter;
  let server: Server;
  let evil: Server;
  let browser: Browser;
  let base: string;
  let evilBase: string;

  beforeAll(async () => {
    ({ database, kafka, producer, browser } = app);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    provider = await startTestProvider(`${base}/ops/auth/callback`);
    router = createOpsRouter({
      db: database.db,
      producer,
      logger: createLogger({ level: 'silent' }),
      opsToken: 'break-glass-token-0123456789',
      topicPrefix: kafka.prefix,
      oidc: {
        issuer: provider.issuer,
        clientId: provider.clientId,
        clientSecret: provider.clientSecret,
        redirectUrl: `${base}/ops/auth/callback`,
        rolesClaim: 'groups',
        roleMap: ROLE_MAP,
        sessionTtlSeconds: 3600,
      },
    });
    const opsApp = express();
    opsApp.use(requestId());
    opsApp.use('/ops', router);
    server = await new Promise<Server>((resolve) => {
      const s = opsApp.listen(port, '127.0.0.1', () => resolve(s));
    });
    // Another site (localhost is not 127.0.0.1 to a browser): a page that posts to the ops API.
    const evilApp = express();
    evilApp.get('/', (_req, res) => res.type('html').send('<!doctype html><title>elsewhere</title>'));
    const evilPort = await freePort();
    evilBase = `http://localhost:${evilPort}`;
    evil = await new Promise<Server>((resolve) => {
      const s = evilApp.listen(evilPort, '127.0.0.1', () => resolve(s));
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await closeServer(server);
    await closeServer(evil);
    await provider?.close();
    await router?.close();
  });

  async function signIn(who: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/ops/`);
    await page.click('#sso-login');
    await page.fill('input[name=login]', who);
    await page.fill('input[name=password]', 'any');
    await page.click('button[type=submit]');
    await page.click('button:has-text("Continue")');
    await page.waitForURL((url) => url.pathname === '/ops/' || url.pathname === '/ops/auth/callback');
    return { context, page };
  }

  async function audit(): Promise<{ actor: string; action: string; target: string }[]> {
    const { rows } = await database.sql.query('SELECT actor, action, target FROM audit_log ORDER BY id');
    return rows as { actor: string; action: string; target: string }[];
  }

  /** A call from the signed-in page, with its session's anti-forgery token, as the console makes. */
  function callFromPage(page: Page, path: string, body: unknown, headers: Record<string, string> = {}) {
    return page.evaluate(
      async ({ path, body, headers }) => {
        const me = (await (await fetch('api/session')).json()) as { csrf_token: string };
        const res = await fetch(`api/${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': me.csrf_token, ...headers },
          body: JSON.stringify(body),
        });
        return {
          status: res.status,
          body: (await res.json()) as { error?: { code: string; role_needed?: string } },
        };
      },
      { path, body, headers },
    );
  }

  it('signs a viewer in, hides redrive, and refuses (and audits) a redrive all the same', async () => {
    const id = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
    const { context, page } = await signIn('vera');
    await expect.poll(() => page.textContent('#whoami')).toBe('Vera Viewer · viewer');
    // The footer names the release that answers: package.json's version.
    expect(await page.textContent('#version')).toBe(`rentbridge ${rentbridgeVersion()}`);
    expect(await page.isVisible('#version')).toBe(true);
    await page.click('#tab-letters');
    await page.click(`#letters-table tbody tr[data-id="${id}"]`);
    await expect.poll(() => page.textContent('#detail-title')).toBe(`Dead letter #${id}`);
    expect(await page.isVisible('#redrive')).toBe(false);
    expect(await page.isVisible('#discard')).toBe(false);

    const refused = await callFromPage(page, `dead-letters/${id}/redrive`, {});
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'forbidden', role_needed: 'operator' });
    expect((await getDeadLetter(database.db, id))?.state).toBe('open');
    expect(await audit()).toEqual(
      expect.arrayContaining([
        { actor: 'Vera Viewer [vera]', action: 'sign_in', target: 'ops_console' },
        {
          actor: 'Vera Viewer [vera]',
          action: 'forbidden',
          target: 'ops_api:POST /dead-letters/:id/redrive',
        },
      ]),
    );
    await context.close();
  });

  it("redrives as an operator, audited under that person's name; a forged X-Ops-Actor changes nothing", async () => {
    const id = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
    const other = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
    const { context, page } = await signIn('otto');
    await expect.poll(() => page.textContent('#whoami')).toBe('Otto Operator · operator');
    await page.click('#tab-letters');
    await page.click(`#letters-table tbody tr[data-id="${id}"]`);
    await page.click('#redrive');
    await page.click('#redrive-yes');
    await expect.poll(async () => (await getDeadLetter(database.db, id))?.state).toBe('redriven');

    const forged = await callFromPage(
      page,
      `dead-letters/${other}/discard`,
      { reason: 'dup' },
      { 'x-ops-actor': 'mallory' },
    );
    expect(forged.status).toBe(200);
    const rows = await audit();
    expect(rows).toEqual(
      expect.arrayContaining([
        { actor: 'Otto Operator [otto]', action: 'redrive', target: `dead_letter:${id}` },
        { actor: 'Otto Operator [otto]', action: 'discard', target: `dead_letter:${other}` },
      ]),
    );
    expect(rows.some((r) => r.actor.includes('mallory'))).toBe(false);
    expect((await getDeadLetter(database.db, other))?.resolvedBy).toBe('Otto Operator [otto]');
    await context.close();
  });

  it('returns to sign-in after sign-out (the old cookie refused) and after the session expires', async () => {
    const { context, page } = await signIn('ada');
    await expect.poll(() => page.textContent('#whoami')).toBe('Ada Admin · admin');
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'rb_ops_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/ops/' });
    await page.click('#logout');
    await page.waitForSelector('#login', { state: 'visible' });
    // The cookie copied before sign-out opens nothing: its session row is gone.
    const replay = await fetch(`${base}/ops/api/session`, {
      headers: { cookie: `rb_ops_session=${session!.value}` },
    });
    expect(replay.status).toBe(401);

    await page.click('#sso-login');
    // Still signed in at the provider: straight back, maybe through consent.
    if (await page.isVisible('button:has-text("Continue")').catch(() => false)) {
      await page.click('button:has-text("Continue")');
    }
    await expect.poll(() => page.textContent('#whoami')).toBe('Ada Admin · admin');
    await database.sql.query(`UPDATE ops_sessions SET expires_at = now() - interval '1 second'`);
    await page.reload();
    await page.waitForSelector('#login', { state: 'visible' });
    expect(await page.isVisible('#tabs')).toBe(false);
    await context.close();
  });

  it('refuses at sign-in a person whose groups map to no role, with a page that says so', async () => {
    const { context, page } = await signIn('uma');
    await expect.poll(() => page.textContent('h1')).toBe('No access to rentbridge ops');
    expect(await page.textContent('body')).toContain('Uma Unmapped');
    expect((await context.cookies()).some((c) => c.name === 'rb_ops_session')).toBe(false);
    expect(await audit()).toEqual(
      expect.arrayContaining([
        { actor: 'Uma Unmapped [uma]', action: 'sign_in_refused', target: 'ops_console' },
      ]),
    );
    const { rows } = await database.sql.query(
      `SELECT count(*)::int AS n FROM ops_sessions WHERE subject = 'uma'`,
    );
    expect(rows[0].n).toBe(0);
    await context.close();
  });

  it('refuses a cross-site POST, and a same-site one without the anti-forgery token', async () => {
    const id = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
    const { context, page } = await signIn('otto');
    await expect.poll(() => page.textContent('#whoami')).toBe('Otto Operator · operator');
    const elsewhere = await context.newPage();
    await elsewhere.goto(evilBase);
    await elsewhere.evaluate(async (url) => {
      // What a hostile page can send: a simple request, with the browser's cookies if it will.
      await fetch(url, {
        method: 'POST',
        mode: 'no-cors',
        credentials: 'include',
        headers: { 'content-type': 'text/plain' },
        body: '{"reason":"cross-site"}',
      }).catch(() => undefined);
    }, `${base}/ops/api/dead-letters/${id}/discard`);
    const noToken = await page.evaluate(async (path) => {
      const res = await fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"reason":"x"}',
      });
      return { status: res.status, code: ((await res.json()) as { error: { code: string } }).error.code };
    }, `api/dead-letters/${id}/discard`);
    expect(noToken).toEqual({ status: 403, code: 'csrf_failed' });
    expect((await getDeadLetter(database.db, id))?.state).toBe('open');
    expect((await audit()).some((r) => r.target === `dead_letter:${id}`)).toBe(false);
    // Everything above left the audit chain whole.
    expect((await verifyAuditChain(database.db)).ok).toBe(true);
    await context.close();
  });
});
