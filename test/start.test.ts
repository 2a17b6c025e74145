import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { demoEnv, runCli, spawnCli } from './support/cli.js';
import { dropSchema } from './support/db.js';
import { freePort } from './support/free-port.js';

/** How long the demo gets to do each thing, polled once a second. */
const WAIT = { timeout: 90_000, interval: 1000 };

function metric(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('rentbridge start', () => {
  describe('without --demo and without PARTNER_API_URL (production is never a demo)', () => {
    it('exits 2 naming PARTNER_API_URL and --demo, having started nothing', async () => {
      const [httpPort, sandboxPort] = [await freePort(), await freePort()];
      const result = await runCli(
        ['start'],
        demoEnv(`s_${randomBytes(5).toString('hex')}`, httpPort, sandboxPort),
      );
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/PARTNER_API_URL is not set: .*`rentbridge start --demo`/);
      expect(result.stdout + result.stderr).not.toMatch(/started the embedded|rentbridge-demo-ops-token/);
    });
  });

  describe('with --demo beside a PARTNER_API_URL', () => {
    it('exits 2: the demo never stands in for a configured Partner API', async () => {
      const result = await runCli(['start', '--demo'], {
        PARTNER_API_URL: 'https://partner.example.com',
        PARTNER_SECRET_KEY: 'a-real-secret',
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/--demo runs the embedded sandbox .*unset PARTNER_API_URL/);
    });
  });

  describe('with --demo (npm start)', () => {
    const schema = `s_${randomBytes(5).toString('hex')}`;
    let child: ChildProcess;
    let log = '';
    let base = '';

    beforeAll(async () => {
      const [httpPort, sandboxPort] = [await freePort(), await freePort()];
      base = `http://127.0.0.1:${httpPort}`;
      child = spawnCli(
        ['start', '--demo'],
        { ...demoEnv(schema, httpPort, sandboxPort), LOG_LEVEL: 'info' },
        (text) => (log += text),
      );
    });

    afterAll(async () => {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
      }
      await dropSchema(schema);
    });

    it('says it started the embedded sandbox, and becomes ready', async () => {
      await vi.waitFor(async () => expect((await fetch(`${base}/readyz`)).ok).toBe(true), WAIT);
      expect(log).toContain('started the embedded Partner API sandbox with demo data');
    });

    it('publishes state changes and applies commands within a minute', async () => {
      const text = await vi.waitFor(async () => {
        const body = await (await fetch(`${base}/metrics`)).text();
        expect(metric(body, 'rentbridge_commands_total', 'status="applied"')).toBeGreaterThan(0);
        return body;
      }, WAIT);
      expect(
        metric(text, 'rentbridge_relay_published_total', 'topic="partner.applications"'),
      ).toBeGreaterThan(0);
    });

    it('registers and enrolls the demo tenants through the guard', async () => {
      const text = await vi.waitFor(async () => {
        const body = await (await fetch(`${base}/metrics`)).text();
        expect(
          metric(body, 'rentbridge_commands_total', 'command="enrollment",status="applied"'),
        ).toBeGreaterThanOrEqual(3);
        return body;
      }, WAIT);
      expect(
        metric(text, 'rentbridge_commands_total', 'command="customer_registration",status="applied"'),
      ).toBe(3);
    });

    it('shows dead letters in the ops API with the demo token', async () => {
      const letters = await vi.waitFor(async () => {
        const res = await fetch(`${base}/ops/api/dead-letters`, {
          headers: { authorization: 'Bearer rentbridge-demo-ops-token' },
        });
        const body = (await res.json()) as { items: Array<{ reason: string }> };
        expect(body.items.length).toBeGreaterThan(0);
        return body.items;
      }, WAIT);
      expect(letters[0]?.reason).toBe('rejected');
    });

    it('logs no error-level line and no kafkajs notice on a clean start against the real broker', () => {
      // By now topics were created (a fresh prefix), leaders elected, and commands and dead letters
      // went through: every line up to here is what an operator sees on a clean start.
      const lines = log
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: string; msg: string; component?: string });
      expect(lines.length).toBeGreaterThan(10);
      expect(lines.filter((l) => l.level === 'error' || l.level === 'fatal')).toEqual([]);
      expect(lines.filter((l) => l.component === 'kafkajs').map((l) => l.msg)).toEqual([]);
    });

    it('stops gracefully on SIGTERM', async () => {
      child.kill('SIGTERM');
      const code = await new Promise<number | null>((r) => child.once('exit', r));
      expect(code).toBe(0);
      expect(log).toContain('"msg":"stopped"');
    });
  });
});
