import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { metrics } from '../../src/metrics.js';
import { createPartnerClient, createRateBudget } from '../../src/partner/index.js';
import { createSandboxControl, startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const run = promisify(execFile);
const WORKER = fileURLToPath(new URL('./support/budget-worker.ts', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
const logger = createLogger({ level: 'silent' });

let sandbox: Sandbox;
let control: SandboxControl;
let database: TestDatabase;

beforeAll(async () => {
  [sandbox, database] = await Promise.all([startSandbox({ port: 0 }), createTestDatabase()]);
  control = createSandboxControl(sandbox.url);
});
afterAll(async () => {
  await sandbox.close();
  await database.drop();
});

interface WorkerResult {
  requests: number;
  failures: number;
  statuses: Record<string, number>;
}

describe('shared rate budget', () => {
  describe('when two client processes share a budget of L against a sandbox limited to L', () => {
    it('uses the whole budget and receives no 429', async () => {
      const limit = 20;
      await control.reset();
      await control.setConfig({ rate_limit_per_minute: limit });
      const env = {
        ...process.env,
        DATABASE_URL: database.url,
        SANDBOX_URL: sandbox.url,
        LIMIT: String(limit),
        SECONDS: '6',
        // Unpaced: each lane takes at most L/61 a second (decisions 015 and 055), so in a 6 s test
        // it could not use the whole window; the bench shows it does over a minute.
        LANES: 'write,readback',
        PACE_MS: '0',
        BUDGET_NAME: 'two-processes',
        // Both begin at one moment, whenever each process is up: unpaced, the first to begin takes
        // the whole window in well under a second, and one up a second later would find none left.
        START_AT: String(Date.now() + 8000),
      };
      const results = await Promise.all(
        [1, 2].map(
          async () =>
            JSON.parse((await run(TSX, [WORKER], { env })).stdout.trim().split('\n').at(-1)!) as WorkerResult,
        ),
      );
      const statuses = results.map((r) => r.statuses);
      expect(statuses.every((s) => s['429'] === undefined)).toBe(true);
      expect(results.every((r) => r.failures === 0)).toBe(true);
      // Both processes worked, and together they used every request the sandbox allows.
      expect(results.every((r) => r.requests > 0)).toBe(true);
      const answered = statuses.flatMap((s) => Object.values(s)).reduce((a, b) => a + b, 0);
      expect(answered).toBe(limit);
    }, 60_000);
  });

  describe('when the API throttles one process', () => {
    it('pauses the budget for every process and counts the 429', async () => {
      await control.reset();
      await control.addFault({
        method: 'GET',
        path: '/partner/v1/roles',
        kind: 'error',
        status: 429,
        code: 'rate_limited',
        times: 1,
      });
      // Every warning of the client and the budget: one 429 is told once (src/partner/throttle.ts).
      const lines: Array<{ level: string; msg: string; pausedUntil?: string }> = [];
      const seen = createLogger(
        { level: 'warn' },
        { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) },
      );
      const budget = createRateBudget({
        db: database.db,
        limitPerMinute: 100,
        logger: seen,
        name: 'throttled',
      });
      const client = createPartnerClient({
        baseUrl: sandbox.url,
        accessKey: 'sandbox-access-key',
        secretKey: 'sandbox-secret-key',
        logger: seen,
        budget,
      });
      const before = (await metrics.throttled.get()).values[0]?.value ?? 0;
      await expect(client.listPage('roles')).resolves.toMatchObject({ status: 200 });
      const after = (await metrics.throttled.get()).values[0]?.value ?? 0;
      expect(after - before).toBe(1);
      const { rows } = await database.sql.query<{ paused_until: Date | null }>(
        `SELECT paused_until FROM rate_budget_state WHERE budget = 'throttled'`,
      );
      expect(rows[0]?.paused_until).toBeInstanceOf(Date);
      const told = lines.filter((l) => /429|throttled/.test(l.msg));
      expect(told.map((l) => l.msg)).toEqual(['partner api throttled']);
      expect(Date.parse(told[0]!.pausedUntil!)).toBe(rows[0]!.paused_until!.getTime());
    });
  });

  describe('when the API reports fewer requests left than this budget took', () => {
    it('learns that another system on the same IP used them', async () => {
      await control.reset();
      await control.setConfig({ rate_limit_per_minute: 50 });
      // "Another system": a client without the shared budget, 10 requests.
      const other = createPartnerClient({
        baseUrl: sandbox.url,
        accessKey: 'sandbox-access-key',
        secretKey: 'sandbox-secret-key',
        logger,
      });
      for (let i = 0; i < 9; i++) await other.listPage('roles');
      const budget = createRateBudget({ db: database.db, limitPerMinute: 50, logger, name: 'learning' });
      const client = createPartnerClient({
        baseUrl: sandbox.url,
        accessKey: 'sandbox-access-key',
        secretKey: 'sandbox-secret-key',
        logger,
        budget,
      });
      await client.listPage('roles');
      // Ours: authenticate + 1 list; the other system's 10 are counted too, once the budget has
      // stored what the answer reported (in the background: the call does not wait for it).
      await expect.poll(async () => (await budget.snapshot()).used).toBe(12);
    });

    it('answers the call without waiting for the budget to store what the API reported', async () => {
      await control.reset();
      const budget = createRateBudget({ db: database.db, limitPerMinute: 50, logger, name: 'learning-slow' });
      let reports = 0;
      // A budget whose store of the report never ends (a database that hangs): the call still answers.
      const stuck = { ...budget, learn: () => (reports++, new Promise<void>(() => {})) };
      const client = createPartnerClient({
        baseUrl: sandbox.url,
        accessKey: 'sandbox-access-key',
        secretKey: 'sandbox-secret-key',
        logger,
        budget: stuck,
      });
      await expect(client.listPage('roles')).resolves.toMatchObject({ status: 200 });
      expect(reports).toBe(2); // authenticate and the list each reported their count
    });

    it('keeps a write answered when the budget fails to store what the API reported', async () => {
      await control.reset();
      const [enrollment] = await control.addRecords('enrollments', [
        { status: 'active', rental_payments: [] },
      ]);
      const budget = createRateBudget({
        db: database.db,
        limitPerMinute: 50,
        logger,
        name: 'learning-fails',
      });
      const failing = { ...budget, learn: () => Promise.reject(new Error('database gone')) };
      const client = createPartnerClient({
        baseUrl: sandbox.url,
        accessKey: 'sandbox-access-key',
        secretKey: 'sandbox-secret-key',
        logger,
        budget: failing,
      });
      const body = { rental_payments: [{ amount_cents: 120_000, paid_on: '2026-11-01' }] };
      // Answered 2xx: not a write whose fate is unknown (the guard would read it back).
      await expect(
        client.reportRentalPayments(Number(enrollment!.id), body, { requestId: 'learn-fails-1' }),
      ).resolves.toMatchObject({ status: expect.any(Number) });
      const writes = (await control.ledger()).writes.filter((w) => w.request_id === 'learn-fails-1');
      expect(writes).toMatchObject([{ applied: true }]);
    });
  });
});
