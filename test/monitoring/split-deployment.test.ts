import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';
import { ROOT, spawnCli, stopProcesses, storesEnv } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { freePort } from '../support/free-port.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { promtool, skipPromtool } from '../support/promtool.js';

/**
 * The README's split deployment, every role its own process on its own HTTP_PORT, read as
 * Prometheus and an orchestrator would: each answers /healthz, /readyz (with its own work's
 * check) and /metrics (only its own metrics, its label sets from 0, promtool-clean), and every
 * alert rule finds its metrics on the role that owns them.
 */

const WAIT = { timeout: 120_000, interval: 1000 };
const COMMAND_CONSUMERS = [
  'application-decisions',
  'rental-payments',
  'customer-registrations',
  'enrollments',
];
const ROLES: Record<string, string[]> = {
  receiver: ['receiver'],
  relay: ['relay'],
  poller: ['poller'],
  ...Object.fromEntries(COMMAND_CONSUMERS.map((name) => [`consumer:${name}`, ['consumer', name]])),
  'consumer:dead-letters': ['consumer', 'dead-letters'],
  callbacks: ['callbacks', 'run'],
};

/** The roles whose /metrics each alert rule needs (monitoring/prometheus/prometheus-split.yml jobs). */
const OWNERS: Record<string, string[]> = {
  RentbridgeRelayNotProgressing: ['relay'],
  RentbridgeOutboxBacklogGrowing: ['relay'],
  RentbridgePollerStale: ['poller'],
  RentbridgeDeadLettersArriving: COMMAND_CONSUMERS.map((n) => `consumer:${n}`),
  RentbridgePartnerThrottled: ['poller', ...COMMAND_CONSUMERS.map((n) => `consumer:${n}`)],
  RentbridgeWriteBudgetExhausted: COMMAND_CONSUMERS.map((n) => `consumer:${n}`),
  RentbridgeCommandsUnverified: COMMAND_CONSUMERS.map((n) => `consumer:${n}`),
  // Each process that takes budget slots reads every source's waiters from PostgreSQL (issue 52).
  RentbridgeSourceCommandsWaiting: COMMAND_CONSUMERS.map((n) => `consumer:${n}`),
  // Read from PostgreSQL by the process that serves the console.
  RentbridgeRoleNotRunning: ['receiver'],
  RentbridgeCallbackEndpointFailing: ['callbacks'],
  RentbridgeCallbacksDeadLettered: ['callbacks'],
  // The relay prunes every table (src/retention/).
  RentbridgeRetentionBehind: ['relay'],
  RentbridgeRetentionNotRunning: ['relay'],
  // The poller runs the scheduled reconciliation (src/reconcile/).
  RentbridgeReconciliationDrift: ['poller'],
};

/** Metric families declared on a /metrics page. */
const declared = (text: string) => new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));

/** A sample's value, by name and label text (`{topic="…",reason="…"}` fragments), or undefined. */
function sample(text: string, name: string, ...labels: string[]): number | undefined {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

/** Each alert's metric selectors: the metric name and its equality matchers. */
async function ruleSelectors(): Promise<Record<string, Array<{ name: string; labels: string[] }>>> {
  const text = await readFile(`${ROOT}monitoring/prometheus/alerts.yml`, 'utf8');
  const out: Record<string, Array<{ name: string; labels: string[] }>> = {};
  for (const block of text.split(/- alert: /).slice(1)) {
    const alert = /^(\w+)/.exec(block)![1]!;
    const expr = /expr: (>-\n(?:\s{10}.*\n)+|.*\n)/.exec(block)![1]!;
    out[alert] = [...expr.matchAll(/\b(rentbridge_[a-z0-9_]+)(\{[^}]*\})?/g)].map((m) => ({
      name: m[1]!.replace(/_bucket$/, ''),
      labels: [...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => `${l[1]}="${l[2]}"`),
    }));
  }
  return out;
}

describe('a split deployment (every role its own process)', () => {
  let database: TestDatabase;
  let kafka: TestKafka;
  let sandbox: Sandbox;
  const children = new Map<string, ChildProcess>();
  const logs = new Map<string, string>();
  const ports = new Map<string, number>();
  const metricsOf = new Map<string, string>();
  const url = (role: string, path: string) => `http://127.0.0.1:${ports.get(role)}${path}`;

  beforeAll(async () => {
    database = await createTestDatabase();
    kafka = createTestKafka();
    await kafka.createTopics();
    sandbox = await startSandbox({ port: 0 });
    for (const [role, args] of Object.entries(ROLES)) {
      const port = await freePort();
      ports.set(role, port);
      logs.set(role, '');
      const child = spawnCli(
        args,
        {
          ...storesEnv(database, kafka),
          KAFKA_SESSION_TIMEOUT_MS: '10000',
          PARTNER_API_URL: sandbox.url,
          PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [`whsec_${randomBytes(24).toString('base64')}`] }),
          PMS_CALLBACKS: JSON.stringify({
            acme: {
              url: 'http://127.0.0.1:9/outcomes',
              secrets: [`whsec_${randomBytes(24).toString('base64')}`],
            },
          }),
          HTTP_PORT: String(port),
          OPS_TOKEN: 'split-deployment-ops-token',
          LOG_LEVEL: 'warn',
        },
        (text) => logs.set(role, logs.get(role)! + text),
      );
      children.set(role, child);
    }
    for (const role of Object.keys(ROLES)) {
      await vi.waitFor(async () => {
        expect(children.get(role)!.exitCode, `${role} exited:\n${logs.get(role)}`).toBeNull();
        const res = await fetch(url(role, '/readyz'));
        expect(res.status, `${role}: ${await res.text()}`).toBe(200);
      }, WAIT);
    }
    for (const role of Object.keys(ROLES))
      metricsOf.set(role, await (await fetch(url(role, '/metrics'))).text());
  }, 300_000);

  afterAll(async () => {
    await stopProcesses(children.values());
    await sandbox?.close();
    await kafka?.close();
    await database?.drop();
  }, 60_000);

  it('every role answers /healthz, and /readyz with the check of its own work', async () => {
    for (const role of Object.keys(ROLES)) {
      expect((await fetch(url(role, '/healthz'))).status, role).toBe(200);
      const ready = (await (await fetch(url(role, '/readyz'))).json()) as {
        status: string;
        checks: Record<string, unknown>;
        roles?: Record<string, Record<string, unknown>>;
      };
      expect(ready.status, role).toBe('ready');
      expect(ready.checks).toMatchObject({ postgres: true, kafka: true, migrations: true, started: true });
      if (role === 'receiver') {
        expect(ready.checks.storage).toBe(true);
        // The receiver's work is to store webhooks: the relay's progress is the relay's to tell.
        expect(ready.checks).not.toHaveProperty('relay');
        continue;
      }
      expect(ready.checks[role], role).toBe(true);
      const details = ready.roles?.[role];
      if (role === 'relay') expect(details).toMatchObject({ state: 'publishing', backlog: 0 });
      if (role === 'poller') expect(Object.keys(details ?? {}).length).toBeGreaterThan(0);
      if (role.startsWith('consumer:')) {
        expect(details).toMatchObject({ inGroup: true, recentCrashes: 0, lag: expect.any(Object) });
        const lag = details!.lag as Record<string, number>;
        expect(Object.keys(lag).length).toBeGreaterThan(0);
        for (const behind of Object.values(lag)) expect(behind).toBe(0);
      }
    }
  });

  it.skipIf(skipPromtool)("every role's /metrics passes promtool check metrics", async () => {
    for (const [role, text] of metricsOf) {
      const { code, output } = await promtool(['check', 'metrics'], { input: text });
      expect(output, role).toBe('');
      expect(code, role).toBe(0);
    }
  });

  it('each role exposes only the metrics of its own work', () => {
    const has = (role: string, name: string) => declared(metricsOf.get(role)!).has(name);
    expect(has('receiver', 'rentbridge_webhooks_total')).toBe(true);
    for (const foreign of [
      'rentbridge_outbox_backlog',
      'rentbridge_relay_lag_seconds',
      'rentbridge_relay_stalled',
      'rentbridge_commands_total',
      'rentbridge_poller_last_success_timestamp_seconds',
    ]) {
      expect(has('receiver', foreign), `receiver: ${foreign}`).toBe(false);
    }
    expect(has('relay', 'rentbridge_outbox_backlog')).toBe(true);
    expect(has('relay', 'rentbridge_webhooks_total')).toBe(false);
    expect(has('relay', 'rentbridge_partner_throttled_total')).toBe(false);
    expect(has('poller', 'rentbridge_poller_last_success_timestamp_seconds')).toBe(true);
    expect(has('poller', 'rentbridge_outbox_backlog')).toBe(false);
    expect(has('poller', 'rentbridge_commands_total')).toBe(false);
    expect(has('consumer:rental-payments', 'rentbridge_commands_total')).toBe(true);
    expect(has('consumer:rental-payments', 'rentbridge_outbox_backlog')).toBe(false);
    expect(has('consumer:dead-letters', 'rentbridge_dead_letters_indexed_total')).toBe(true);
    expect(has('consumer:dead-letters', 'rentbridge_commands_total')).toBe(false);
    expect(has('callbacks', 'rentbridge_callback_attempts_total')).toBe(true);
    expect(has('callbacks', 'rentbridge_commands_total')).toBe(false);
    expect(has('receiver', 'rentbridge_callback_attempts_total')).toBe(false);
    expect(
      sample(
        metricsOf.get('callbacks')!,
        'rentbridge_callback_attempts_total',
        'source="acme"',
        'result="delivered"',
      ),
    ).toBe(0);
  });

  it('each role starts the label sets it knows at 0, so the first event raises an alert', () => {
    const payments = metricsOf.get('consumer:rental-payments')!;
    expect(
      sample(payments, 'rentbridge_commands_total', 'command="rental_payment"', 'status="unverified"'),
    ).toBe(0);
    expect(
      sample(
        payments,
        'rentbridge_dead_letters_total',
        'topic="commands.rental-payments"',
        'reason="rejected"',
      ),
    ).toBe(0);
    expect(sample(payments, 'rentbridge_rate_budget_wait_seconds_count', 'lane="write"')).toBe(0);
    // A consumer shows its own command only.
    expect(sample(payments, 'rentbridge_commands_total', 'command="application_decision"')).toBeUndefined();
    const relay = metricsOf.get('relay')!;
    expect(sample(relay, 'rentbridge_relay_parked_total', 'topic="commands.rental-payments"')).toBe(0);
    const poller = metricsOf.get('poller')!;
    expect(sample(poller, 'rentbridge_poller_requests_total', 'resource="customers"')).toBeGreaterThanOrEqual(
      0,
    );
    const receiver = metricsOf.get('receiver')!;
    expect(sample(receiver, 'rentbridge_webhooks_total', 'source="pms:acme"', 'result="accepted"')).toBe(0);
    const index = metricsOf.get('consumer:dead-letters')!;
    expect(
      sample(
        index,
        'rentbridge_dead_letters_indexed_total',
        'topic="commands.enrollments"',
        'reason="unverified"',
      ),
    ).toBe(0);
  });

  it('every alert rule finds the series it needs on the /metrics of the role that owns it', async () => {
    const rules = await ruleSelectors();
    expect(Object.keys(rules).sort()).toEqual(Object.keys(OWNERS).sort());
    for (const [alert, selectors] of Object.entries(rules)) {
      for (const role of OWNERS[alert]!) {
        const text = metricsOf.get(role)!;
        for (const { name, labels } of selectors) {
          expect(declared(text).has(name), `${alert}: ${name} on ${role}`).toBe(true);
          // Counters and histograms are there from 0; a gauge has its series once measured.
          const isGauge = new RegExp(`^# TYPE ${name} gauge$`, 'm').test(text);
          if (!isGauge && labels.length > 0) {
            const series = name.endsWith('_total') ? name : `${name}_count`;
            expect(sample(text, series, ...labels), `${alert}: ${series}${labels.join(',')} on ${role}`).toBe(
              0,
            );
          }
        }
      }
    }
  });

  it("a consumer's first dead letter moves the series that was already at 0", async () => {
    const producer = kafka.kafka.producer();
    await producer.connect();
    try {
      await producer.send({
        topic: `${kafka.prefix}commands.rental-payments`,
        messages: [{ key: 'enr-split', value: 'not a CloudEvent' }],
      });
    } finally {
      await producer.disconnect();
    }
    await vi.waitFor(async () => {
      const text = await (await fetch(url('consumer:rental-payments', '/metrics'))).text();
      expect(
        sample(
          text,
          'rentbridge_dead_letters_total',
          'topic="commands.rental-payments"',
          'reason="invalid_message"',
        ),
      ).toBe(1);
    }, WAIT);
  });
});
