import type { Browser, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import { skipWithoutChromium } from './browser.js';

const BREAK_GLASS = 'e2e-break-glass-0123456789';

/**
 * #44: an admin manages personal tokens from the console (as with `rentbridge ops-token`): the new
 * token shown once, listed without its secret, revoked; a viewer's console has no Tokens page.
 */
describe.skipIf(skipWithoutChromium)('the console’s Tokens page', () => {
  const app = useApp({ ops: { opsToken: BREAK_GLASS, topicPrefix: 'e2e.', app: 'express' }, browser: true });
  let database: TestDatabase;
  let base: string;
  let browser: Browser;

  beforeAll(() => ({ database, base, browser } = app));

  async function signIn(token: string): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(`${base}/ops`);
    await page.fill('#token', token);
    await page.click('#login-submit');
    await page.locator('#whoami').waitFor();
    return page;
  }

  const session = (token: string) =>
    fetch(`${base}/ops/api/session`, { headers: { authorization: `Bearer ${token}` } });

  it('lets an admin create a token, shown once, and revoke it', async () => {
    const admin = await signIn(BREAK_GLASS);
    await admin.click('#tab-tokens');
    await admin.fill('#new-token-name', 'support-sam');
    await admin.selectOption('#new-token-role', 'viewer');
    await admin.fill('#new-token-days', '30');
    await admin.click('#new-token-submit');
    await admin.locator('#new-token').waitFor();
    const token = (await admin.locator('#new-token-value').textContent())!.trim();
    expect(token).toMatch(/^rbo_/);
    expect((await session(token)).status).toBe(200);

    const row = admin.locator('tr[data-token="support-sam"]');
    await row.waitFor();
    expect(await row.locator('td').nth(1).textContent()).toBe('viewer');
    expect(await admin.locator('#tokens-table').textContent()).not.toContain(token);
    // Dismissed, the token is gone from the page.
    await admin.click('#new-token-done');
    expect(await admin.locator('#new-token-value').textContent()).toBe('');

    // The token's own console: a viewer, with no Tokens page.
    const viewer = await signIn(token);
    expect(await viewer.locator('#whoami').textContent()).toContain('support-sam · viewer');
    expect(await viewer.locator('#tab-tokens').isVisible()).toBe(false);
    await viewer.close();

    await admin.click('tr[data-token="support-sam"] [data-revoke]');
    await admin.locator('tr[data-token="support-sam"]').waitFor({ state: 'detached' });
    expect((await session(token)).status).not.toBe(200);
    await admin.close();

    const audit = await database.sql.query<{ actor: string; action: string; target: string }>(
      "SELECT actor, action, target FROM audit_log WHERE action IN ('token_create', 'token_revoke') ORDER BY id",
    );
    expect(audit.rows.map((r) => [r.action, r.target])).toEqual([
      ['token_create', 'ops_token:support-sam'],
      ['token_revoke', 'ops_token:support-sam'],
    ]);
    expect(new Set(audit.rows.map((r) => r.actor))).toEqual(new Set(['break-glass']));
  });

  it('says why a token cannot be created', async () => {
    const admin = await signIn(BREAK_GLASS);
    await admin.click('#tab-tokens');
    for (let i = 0; i < 2; i++) {
      await admin.fill('#new-token-name', 'twice');
      await admin.click('#new-token-submit');
      if (i === 0) await admin.locator('tr[data-token="twice"]').waitFor();
    }
    await expect
      .poll(() => admin.locator('#token-error').textContent())
      .toMatch(/a token named "twice" exists/);
    await admin.close();
  });
});
