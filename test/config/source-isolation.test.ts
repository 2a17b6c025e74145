import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { runCli, spawnCli, stopProcesses } from '../support/cli.js';
import { freePort } from '../support/free-port.js';
import { useTestDatabase } from '../support/db.js';

/**
 * Issue 51 item 1: with two or more PMS sources, each acts with a scoped key of its own, or the
 * operator says the sources trust each other; otherwise nothing starts (exit 2) and the refusal
 * names the sources without one.
 */
const secret = (n: number) =>
  `whsec_${Buffer.from(`source-isolation-secret-${n}-padding!`).toString('base64')}`;
const SECRETS = JSON.stringify({ acme: [secret(1)], beta: [secret(2)], gamma: [secret(3)] });
const key = (name: string, extra: Record<string, unknown> = {}) => ({
  access_key: `${name}-access`,
  secret_key: `${name}-secret-value`,
  ...extra,
});

function problemsOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.join('\n');
    throw error;
  }
  return '';
}

describe('PMS sources held apart', () => {
  describe('when two or more sources have no key of their own', () => {
    it('refuses the configuration, naming each source without one, and how to fix it', () => {
      const problems = problemsOf({
        PMS_WEBHOOK_SECRETS: SECRETS,
        PMS_PARTNER_KEYS: JSON.stringify({ beta: key('beta') }),
      });
      expect(problems).toMatch(/^PMS_PARTNER_KEYS: 3 PMS sources, and "acme", "gamma" have no scoped/m);
      expect(problems).not.toMatch(/"beta"/);
      expect(problems).toMatch(/PMS_SHARED_PARTNER_KEY=trusted/);
      expect(problems).not.toContain('beta-secret-value');
    });

    it('counts a key said to be unscoped, or one another source or the deployment also holds, as none', () => {
      const problems = problemsOf({
        PMS_WEBHOOK_SECRETS: SECRETS,
        PARTNER_ACCESS_KEY: 'deployment-access',
        PMS_PARTNER_KEYS: JSON.stringify({
          acme: key('shared'),
          beta: key('shared'),
          gamma: key('gamma', { scoped: false }),
        }),
      });
      expect(problems).toMatch(/"acme", "beta", "gamma" have no scoped/);
      const deployment = problemsOf({
        PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [secret(1)], beta: [secret(2)] }),
        PARTNER_ACCESS_KEY: 'deployment-access',
        PMS_PARTNER_KEYS: JSON.stringify({
          acme: key('acme'),
          beta: { access_key: 'deployment-access', secret_key: 'x' },
        }),
      });
      expect(deployment).toMatch(/"beta" has no scoped Partner API key of its own/);
    });
  });

  describe('when every source has a key of its own, or there is only one source', () => {
    it('starts', () => {
      expect(
        problemsOf({
          PMS_WEBHOOK_SECRETS: SECRETS,
          PMS_PARTNER_KEYS: JSON.stringify({
            acme: key('acme'),
            beta: key('beta', { scoped: true }),
            gamma: key('gamma'),
          }),
        }),
      ).toBe('');
      expect(problemsOf({ PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [secret(1)] }) })).toBe('');
    });
  });

  describe('when PMS_SHARED_PARTNER_KEY=trusted', () => {
    it('lets the sources share a key; any other value is refused', () => {
      expect(problemsOf({ PMS_WEBHOOK_SECRETS: SECRETS, PMS_SHARED_PARTNER_KEY: 'trusted' })).toBe('');
      expect(problemsOf({ PMS_WEBHOOK_SECRETS: SECRETS, PMS_SHARED_PARTNER_KEY: 'yes' })).toMatch(
        /PMS_SHARED_PARTNER_KEY: only "trusted"/,
      );
    });
  });

  describe('every role, started with two sources on the deployment key', () => {
    it.each([
      ['start'],
      ['receiver'],
      ['relay'],
      ['poller'],
      ['consumer', 'rental-payments'],
      ['callbacks', 'run'],
    ])('`rentbridge %s` exits 2 naming the sources', async (...args: string[]) => {
      const result = await runCli(args.filter(Boolean), {
        PMS_WEBHOOK_SECRETS: SECRETS,
        PMS_PARTNER_KEYS: '',
        PMS_SHARED_PARTNER_KEY: '',
        PARTNER_API_URL: 'http://127.0.0.1:9',
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/PMS_PARTNER_KEYS: 3 PMS sources, and "acme", "beta", "gamma" have no/);
    });
  });

  describe('when a role starts with PMS_SHARED_PARTNER_KEY=trusted', () => {
    const database = useTestDatabase();

    it('warns that the sources share a key, naming them and never a key', async () => {
      let out = '';
      const child = spawnCli(
        ['receiver'],
        {
          PMS_WEBHOOK_SECRETS: SECRETS,
          PMS_PARTNER_KEYS: JSON.stringify({ beta: key('beta') }),
          PMS_SHARED_PARTNER_KEY: 'trusted',
          DATABASE_URL: database.url,
          HTTP_PORT: String(await freePort()),
          LOG_FORMAT: 'json',
          LOG_LEVEL: 'info',
        },
        (text) => (out += text),
      );
      try {
        await expect.poll(() => out, { timeout: 30_000 }).toMatch(/PMS_SHARED_PARTNER_KEY=trusted/);
      } finally {
        await stopProcesses([child]);
      }
      const line = JSON.parse(out.split('\n').find((l) => l.includes('PMS_SHARED_PARTNER_KEY=trusted'))!);
      expect(line).toMatchObject({
        level: 'warn',
        sources: ['acme', 'beta', 'gamma'],
        sharedBy: ['acme', 'gamma'],
      });
      expect(out).not.toContain('beta-secret-value');
    });
  });
});
