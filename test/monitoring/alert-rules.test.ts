import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';
import { promtool, skipPromtool } from '../support/promtool.js';

/**
 * Every alert rule of monitoring/prometheus/alerts.yml has unit tests in alerts.test.yml (synthetic
 * series in, the alert out, and none while healthy), run here through `promtool test rules`: a
 * renamed metric or label fails this test instead of silencing the alert.
 */

const RULES = 'monitoring/prometheus/alerts.yml';
const RULE_TESTS = 'monitoring/prometheus/alerts.test.yml';
const SPLIT_SCRAPE = 'monitoring/prometheus/prometheus-split.yml';

/** Each `alert_rule_test` entry of the unit tests: its alert and whether it expects it to fire. */
async function ruleTests(): Promise<Array<{ alert: string; fires: boolean }>> {
  const text = await readFile(`${ROOT}${RULE_TESTS}`, 'utf8');
  return text
    .split(/- eval_time:/)
    .slice(1)
    .map((block) => ({
      alert: /alertname: (\w+)/.exec(block)?.[1] ?? '',
      fires: !/exp_alerts: \[\]/.test(block),
    }));
}

describe('the alert rules', () => {
  it('each have a unit test where they fire and one where they stay silent', async () => {
    const alerts = [...(await readFile(`${ROOT}${RULES}`, 'utf8')).matchAll(/- alert: (\w+)/g)].map(
      (m) => m[1]!,
    );
    expect(alerts.length).toBeGreaterThanOrEqual(7);
    const tests = await ruleTests();
    for (const alert of alerts) {
      expect(
        tests.some((t) => t.alert === alert && t.fires),
        `${alert} fires in a test`,
      ).toBe(true);
      expect(
        tests.some((t) => t.alert === alert && !t.fires),
        `${alert} stays silent in a test`,
      ).toBe(true);
    }
  });

  it.skipIf(skipPromtool)('pass promtool check rules', async () => {
    const { code, output } = await promtool(['check', 'rules', RULES], { cwd: ROOT });
    expect(output).toContain('SUCCESS');
    expect(code).toBe(0);
  });

  it.skipIf(skipPromtool)('pass their unit tests (promtool test rules)', async () => {
    const { code, output } = await promtool(['test', 'rules', RULE_TESTS], { cwd: ROOT });
    expect(output).not.toContain('FAILED');
    expect(output).toContain('SUCCESS');
    expect(code).toBe(0);
  });
});

describe("the split deployment's scrape configuration", () => {
  it('has every role as a target, the job named after the role', async () => {
    const text = await readFile(`${ROOT}${SPLIT_SCRAPE}`, 'utf8');
    const jobs = [...text.matchAll(/job_name: (\S+)/g)].map((m) => m[1]);
    expect(jobs).toEqual([
      'rentbridge-receiver',
      'rentbridge-relay',
      'rentbridge-poller',
      'rentbridge-consumer',
      'rentbridge-callbacks',
    ]);
    for (const consumer of [
      'application-decisions',
      'rental-payments',
      'customer-registrations',
      'enrollments',
      'dead-letters',
    ]) {
      expect(text).toContain(`consumer-${consumer}:`);
    }
  });

  it.skipIf(skipPromtool)('passes promtool check config, with the alert rules', async () => {
    const { code, output } = await promtool(['check', 'config', SPLIT_SCRAPE], { cwd: ROOT });
    const rules = (readFileSync(`${ROOT}${RULES}`, 'utf8').match(/^\s*- alert: /gm) ?? []).length;
    expect(output).toContain(`SUCCESS: ${rules} rules found`);
    expect(code).toBe(0);
  });
});
