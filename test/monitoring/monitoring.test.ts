import { execFile, execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/http/http-app.js';
import { createLogger } from '../../src/logger.js';
import { ROOT } from '../support/cli.js';

/**
 * The alert rules and the dashboard ops reach for first (monitoring/) name only metrics that
 * exist, and /metrics is what Prometheus's own checker accepts. promtool comes from Debian's
 * `prometheus` package (.ci/run installs it); without it here, only its checks are skipped.
 */

const run = promisify(execFile);
const RULES = 'monitoring/prometheus/alerts.yml';
const DASHBOARD = 'monitoring/grafana/rentbridge.json';

function hasPromtool(): boolean {
  try {
    execFileSync('promtool', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Metric names in PromQL text; a histogram's series name their histogram. */
function metricNames(text: string): Set<string> {
  return new Set(
    [...text.matchAll(/\brentbridge_[a-z0-9_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')),
  );
}

describe('monitoring', () => {
  let server: ReturnType<ReturnType<typeof createHttpApp>['listen']>;
  let exposed = '';

  beforeAll(async () => {
    const app = createHttpApp({ logger: createLogger({ level: 'silent' }), mounts: [] });
    server = await new Promise<typeof server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const { port } = server.address() as AddressInfo;
    exposed = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  const declared = () => new Set([...exposed.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));

  describe('the alert rules', () => {
    it('name only metrics that /metrics exposes', async () => {
      const names = metricNames(await readFile(`${ROOT}${RULES}`, 'utf8'));
      expect(names.size).toBeGreaterThan(5);
      const missing = [...names].filter((n) => !declared().has(n));
      expect(missing).toEqual([]);
    });

    it('cover every condition of the runbook', async () => {
      const text = await readFile(`${ROOT}${RULES}`, 'utf8');
      const alerts = [...text.matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
      expect(alerts).toEqual(
        expect.arrayContaining([
          'RentbridgeRelayNotProgressing',
          'RentbridgeOutboxBacklogGrowing',
          'RentbridgePollerStale',
          'RentbridgeDeadLettersArriving',
          'RentbridgePartnerThrottled',
          'RentbridgeWriteBudgetExhausted',
          'RentbridgeCommandsUnverified',
        ]),
      );
    });

    it.skipIf(!hasPromtool())('pass promtool check rules', async () => {
      const { stdout } = await run('promtool', ['check', 'rules', RULES], { cwd: ROOT });
      expect(stdout).toContain('SUCCESS');
    });
  });

  describe('the dashboard', () => {
    it('queries only metrics that /metrics exposes', async () => {
      const dashboard = JSON.parse(await readFile(`${ROOT}${DASHBOARD}`, 'utf8')) as {
        panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
      };
      const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
      expect(exprs.length).toBeGreaterThan(10);
      const missing = [...metricNames(exprs.join('\n'))].filter((n) => !declared().has(n));
      expect(missing).toEqual([]);
    });
  });

  describe('/metrics', () => {
    it.skipIf(!hasPromtool())('passes promtool check metrics', async () => {
      const child = execFile('promtool', ['check', 'metrics']);
      let output = '';
      child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((resolve) => {
        child.on('close', resolve);
        child.stdin!.end(exposed);
      });
      expect(output).toBe('');
      expect(code).toBe(0);
    });
  });
});
