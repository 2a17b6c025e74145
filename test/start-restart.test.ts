import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { createSandboxControl } from '../src/dev/sandbox/index.js';
import type { SandboxControl } from '../src/dev/sandbox/control-client.js';
import { ROOT } from './support/cli.js';
import { freePort } from './support/free-port.js';

/**
 * Issue 41: the demo's sandbox is a product feature and keeps its state across restarts
 * (decision 047): `npm start`, a write, Ctrl-C, `npm start` again: the records, their ids, the
 * payments and decisions rentbridge applied, the ledger are all still there, nothing is seeded
 * twice, and the second start adds no demo dead letters.
 */

const WAIT = { timeout: 120_000, interval: 1000 };
const DOOMED_APPLICATION = '999999999';

const schema = `s_${randomBytes(5).toString('hex')}`;
const { connectionString } = parseDatabaseUrl(inject('databaseUrl'));
const sql = new pg.Pool({ connectionString, max: 2, options: `-c search_path=${schema}` });

interface Run {
  child: ChildProcess;
  base: string;
  sandbox: SandboxControl;
  log: () => string;
}

async function startOnce(): Promise<Run> {
  const [httpPort, sandboxPort] = [await freePort(), await freePort()];
  let log = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'start', '--demo'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: withSchema(inject('databaseUrl'), schema),
      KAFKA_BROKERS: inject('kafkaBrokers'),
      KAFKA_TOPIC_PREFIX: `${schema}.`,
      HTTP_PORT: String(httpPort),
      SANDBOX_PORT: String(sandboxPort),
      OPS_TOKEN: '',
      PARTNER_API_URL: '',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const base = `http://127.0.0.1:${httpPort}`;
  await vi.waitFor(async () => expect((await fetch(`${base}/readyz`)).ok).toBe(true), WAIT);
  return { child, base, sandbox: createSandboxControl(`http://127.0.0.1:${sandboxPort}`), log: () => log };
}

async function stop(run: Run): Promise<void> {
  const exited = new Promise<number | null>((resolve) => run.child.once('exit', resolve));
  run.child.kill('SIGTERM');
  expect(await exited).toBe(0);
}

async function count(query: string, ...values: unknown[]): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(query, values);
  return rows[0]!.n;
}

/** The doomed demo decisions the receiver took in, and the dead letters indexed. */
const doomedReceived = () =>
  count(
    `SELECT count(*)::int AS n FROM outbox WHERE type LIKE '%decision%' AND data->>'application_id' = $1`,
    DOOMED_APPLICATION,
  );
const deadLetters = () => count('SELECT count(*)::int AS n FROM dead_letters');
const demoWebhooks = () =>
  count(`SELECT count(*)::int AS n FROM webhook_receipts WHERE source = 'pms:demo-pms'`);

describe('rentbridge start, stopped and started again', () => {
  let first: Run | undefined;
  let second: Run | undefined;

  afterAll(async () => {
    for (const run of [first, second])
      if (run && run.child.exitCode === null) {
        run.child.kill('SIGKILL');
        await new Promise((r) => run.child.once('exit', r));
      }
    await sql.end();
    const client = new pg.Client({ connectionString });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await client.end();
  });

  const before = {
    customerId: 0,
    customers: 0,
    ledger: 0,
    doomed: 0,
    letters: 0,
    webhooks: 0,
  };

  beforeAll(async () => {
    first = await startOnce();
    expect(first.log()).toContain('started the embedded Partner API sandbox with demo data');
    // A write of our own, through the sandbox's control API.
    const [added] = await first.sandbox.addRecords('customers', [
      { first_name: 'Kept', last_name: 'Across', email: `kept.${schema}@example.com` },
    ]);
    before.customerId = Number(added!.id);
    // The demo's doomed decisions: at least one dead-lettered, and every one received has its letter.
    await vi.waitFor(async () => {
      const doomed = await doomedReceived();
      expect(doomed).toBeGreaterThan(0);
      expect(await deadLetters()).toBe(doomed);
    }, WAIT);
    before.customers = (await first.sandbox.records('customers')).length;
    before.ledger = (await first.sandbox.ledger()).writes.length;
    await stop(first);
    before.doomed = await doomedReceived();
    before.letters = await deadLetters();
    before.webhooks = await demoWebhooks();
    second = await startOnce();
  }, 300_000);

  it('says it restored the sandbox instead of seeding it again', () => {
    expect(second!.log()).toContain('with the data it had when it stopped');
    expect(second!.log()).not.toContain('with demo data, and pointed');
  });

  it('keeps the records, and new ones take the next ids', async () => {
    const customers = await second!.sandbox.records('customers');
    const kept = customers.find((c) => c.id === before.customerId);
    expect(kept).toMatchObject({ first_name: 'Kept', last_name: 'Across' });
    // Not seeded twice (the second start's demo registers a few tenants at most).
    expect(customers.length).toBeGreaterThanOrEqual(before.customers);
    expect(customers.length).toBeLessThan(before.customers + 10);
    const [next] = await second!.sandbox.addRecords('customers', [{ first_name: 'Next' }]);
    expect(Number(next!.id)).toBeGreaterThan(Math.max(...customers.map((c) => c.id)));
    expect((await second!.sandbox.ledger()).writes.length).toBeGreaterThanOrEqual(before.ledger);
  });

  it('still holds every payment and decision rentbridge applied before the restart', async () => {
    const { rows } = await sql.query<{ command_type: string; payload: Record<string, unknown> }>(
      `SELECT command_type, payload FROM commands
        WHERE state = 'applied' AND command_type IN ('rental_payment', 'application_decision')`,
    );
    expect(rows.length).toBeGreaterThan(0);
    const enrollments = new Map((await second!.sandbox.records('enrollments')).map((e) => [e.id, e]));
    const applications = new Map((await second!.sandbox.records('applications')).map((a) => [a.id, a]));
    for (const { command_type: type, payload } of rows) {
      if (type === 'rental_payment') {
        const payments = enrollments.get(Number(payload.enrollment_id))?.rental_payments as
          Array<Record<string, unknown>> | undefined;
        expect(
          payments?.some((p) => p.amount_cents === payload.amount_cents && p.paid_on === payload.paid_on),
          JSON.stringify(payload),
        ).toBe(true);
      } else {
        const status = applications.get(Number(payload.application_id))?.status;
        expect(status, JSON.stringify(payload)).toBe(
          payload.decision === 'approve' ? 'approved' : 'declined',
        );
      }
    }
  });

  it('adds no demo dead letters', async () => {
    // Past the point where the first start had sent two doomed decisions (steps 8 and 14).
    await vi.waitFor(
      async () => expect(await demoWebhooks()).toBeGreaterThanOrEqual(before.webhooks + 11),
      WAIT,
    );
    expect(before.letters).toBeGreaterThan(0);
    expect(await doomedReceived()).toBe(before.doomed);
    expect(await deadLetters()).toBe(before.doomed);
  }, 150_000);

  it('stops gracefully again', async () => {
    await stop(second!);
  });
});
