import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exposeCallbackMetrics } from '../../src/callbacks/callback-metrics.js';
import { createHttpApp } from '../../src/http/http-app.js';
import { createLogger } from '../../src/logger.js';
import { exposeMetrics, METRIC_GROUPS, type MetricGroup } from '../../src/metrics.js';
import { exposeReconcileMetrics } from '../../src/reconcile/reconcile-metrics.js';
import { exposeRetentionMetrics } from '../../src/retention/retention-metrics.js';
import { ROOT } from '../support/cli.js';
import { promtool, skipPromtool } from '../support/promtool.js';

/**
 * The alert rules and the dashboard ops reach for first (monitoring/) name only metrics that
 * exist in a process running every role (`rentbridge start`), and that /metrics is what
 * Prometheus's own checker accepts. Which role owns which metric, and that a split deployment's
 * roles each expose theirs, is test/monitoring/split-deployment.test.ts.
 */

const RULES = 'monitoring/prometheus/alerts.yml';
const DASHBOARD = 'monitoring/grafana/rentbridge.json';

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
    // Every role's metrics, as `rentbridge start` exposes them.
    exposeMetrics(...(Object.keys(METRIC_GROUPS) as MetricGroup[]));
    // And the outcome callbacks' (`start` with PMS_CALLBACKS set runs that role too).
    exposeCallbackMetrics(['acme']);
    // And what the relay's pruner and the poller's reconciler expose once `start` builds them.
    exposeRetentionMetrics();
    exposeReconcileMetrics();
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
    it('name only metrics that /metrics of every role in one process exposes', async () => {
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
    it.skipIf(skipPromtool)('passes promtool check metrics', async () => {
      const { code, output } = await promtool(['check', 'metrics'], { input: exposed });
      expect(output).toBe('');
      expect(code).toBe(0);
    });
  });
});
