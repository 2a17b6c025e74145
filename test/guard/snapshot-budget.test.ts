import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applicationDecisionReadBack } from '../../src/command-types/application-decisions/application-decision-read-back.js';
import { type ReadContext, createSnapshotPageCache } from '../../src/guard/read-backs/read-back.js';
import { rentalPaymentReadBack } from '../../src/command-types/rental-payments/rental-payment-read-back.js';
import { createSnapshotStore, type SnapshotStore } from '../../src/guard/read-backs/snapshot-store.js';
import { createLogger } from '../../src/logger.js';
import type { PartnerClient } from '../../src/partner/index.js';
import { runResourcePass } from '../../src/poller/resource-pass.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';
import type { Sandbox } from '../../src/dev/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { addEnrollments } from '../support/enrollments.js';
import { startSandboxPartner } from '../support/sandbox.js';

// Issue 43 item 1: Partner requests per payment, counted at the client's fetch, on the sandbox.
const logger = createLogger({ level: 'silent' });
let sandbox: Sandbox;
let control: SandboxControl;
let database: TestDatabase;
let partner: PartnerClient;
const counted = { reads: 0, writes: 0, pagesAsked: [] as number[] };

const ctx: ReadContext = { nextReadId: () => `rb-${Math.random().toString(36).slice(2)}` };
const REPORT = (id: number) => `/partner/v1/enrollments/${id}/report_rental_payments`;

beforeAll(async () => {
  let started: Awaited<ReturnType<typeof startSandboxPartner>>;
  [started, database] = await Promise.all([
    startSandboxPartner({
      onRequest: (url) => {
        if (url.pathname === '/partner/v1/applications') counted.reads++;
        if (url.pathname === '/partner/v1/enrollments') {
          counted.reads++;
          counted.pagesAsked.push(Number(url.searchParams.get('page')));
        } else if (url.pathname.endsWith('/report_rental_payments')) counted.writes++;
      },
    }),
    createTestDatabase(),
  ]);
  ({ sandbox, control, partner } = started);
  // The rate limit is not what these tests measure.
  await control.setConfig({ rate_limit_per_minute: 100_000 });
});
afterAll(async () => {
  await sandbox?.close();
  await database?.drop();
});

const command = (enrollment: number, i: number) => ({
  payment_id: `pay-${enrollment}-${i}`,
  enrollment_id: String(enrollment),
  amount_cents: 100_000 + i,
  paid_on: '2026-11-01',
  period: '2026-11',
});

/** What the guard does for a payment whose write answers: a snapshot, then the write. */
async function pay(strategy: ReturnType<typeof rentalPaymentReadBack>, enrollment: number, i: number) {
  const c = command(enrollment, i) as never;
  const snapshot = await strategy.snapshot(c, ctx);
  await strategy.write(c, `rb-w-${enrollment}-${i}`);
  return snapshot;
}

function store(maxAgeMs: number, keyId = `key-${Math.random()}`): SnapshotStore {
  return createSnapshotStore({ db: database.db, keyId, maxAgeMs });
}

async function paymentsPerEnrollment(ids: number[]): Promise<number[]> {
  const wanted = new Set(ids);
  return (await control.records('enrollments'))
    .filter((r) => wanted.has(Number(r.id)))
    .map((r) => (r.rental_payments as unknown[]).length);
}

/** The sandbox as new, its rate limit out of the way (not what these tests measure). */
async function freshSandbox(): Promise<void> {
  await control.reset();
  await control.setConfig({ rate_limit_per_minute: 100_000 });
}

/** A poller pass over `resource`, storing what it reads as snapshots under `keyId`. */
async function pollerPass(resource: 'enrollments' | 'applications', keyId: string): Promise<void> {
  await runResourcePass({
    partner,
    db: database.db,
    logger,
    resource,
    backfillFrom: null,
    progressEveryPages: 10,
    perPage: 1000,
    now: () => new Date(),
    hooks: {},
    isStopping: () => false,
    snapshots: store(600_000, keyId),
  });
}

/**
 * Pays the payments of `ids` (`payAll`), then: one write each, at most `bound` Partner requests
 * per payment, and each enrollment holds its payment once.
 */
async function expectRequestsPerPayment(ids: number[], bound: number, payAll: () => Promise<unknown>) {
  counted.reads = counted.writes = 0;
  await payAll();
  expect(counted.writes).toBe(ids.length);
  expect((counted.reads + counted.writes) / ids.length).toBeLessThanOrEqual(bound);
  expect(await paymentsPerEnrollment(ids)).toEqual(ids.map(() => 1));
}

describe('Partner requests per payment', () => {
  describe('in a month-end burst (300 payments, 20 at a time, 3,000 enrollments over 3 pages)', () => {
    it('costs at most 1.05 requests per payment, each payment applied once', async () => {
      await freshSandbox();
      const ids = await addEnrollments(control, 3000);
      const strategy = rentalPaymentReadBack(partner, {
        snapshotCache: createSnapshotPageCache({ ttlMs: 1000 }),
        snapshotStore: store(600_000),
      });
      const burst = ids.filter((_, i) => i % 10 === 0);
      let next = 0;
      await expectRequestsPerPayment(burst, 1.05, () =>
        Promise.all(
          Array.from({ length: 20 }, async () => {
            while (next < burst.length) await pay(strategy, burst[next++]!, 0);
          }),
        ),
      );
    }, 120_000);
  });

  describe('at a trickle (one payment after another, 5,000 enrollments) after a poller pass', () => {
    it('costs at most 1.1 requests per payment', async () => {
      await freshSandbox();
      const ids = await addEnrollments(control, 5000);
      const keyId = 'deployment-trickle';
      await pollerPass('enrollments', keyId);
      // No page shared in the process: at one payment a second, a 1 s page would not serve the next.
      const strategy = rentalPaymentReadBack(partner, { snapshotStore: store(600_000, keyId) });
      const trickle = ids.filter((_, i) => i % 97 === 3);
      await expectRequestsPerPayment(trickle, 1.1, async () => {
        for (const id of trickle) await pay(strategy, id, 1);
      });
    }, 120_000);
  });

  describe('when the stored read of a record is older than SNAPSHOT_MAX_AGE_MS', () => {
    it('is refused, and the snapshot re-reads the page that held the record (not page 1)', async () => {
      await freshSandbox();
      const ids = await addEnrollments(control, 3000);
      const keyId = 'old-reads';
      // Page 3 of 3 (ids descend): the oldest enrollments; read once, then let it age past 300 ms.
      const target = ids[5]!;
      const first = rentalPaymentReadBack(partner, { snapshotStore: store(300, keyId) });
      await first.snapshot(command(target, 0) as never, ctx);
      await new Promise((r) => setTimeout(r, 400));
      counted.reads = 0;
      counted.pagesAsked = [];
      const refusedAt = Date.now();
      const snapshot = await rentalPaymentReadBack(partner, { snapshotStore: store(300, keyId) }).snapshot(
        command(target, 0) as never,
        ctx,
      );
      expect(snapshot.found).toBe(true);
      expect(counted.pagesAsked).toEqual([3]);
      // The snapshot rests on the new read, not on the refused one.
      expect(Date.parse(snapshot.taken_at)).toBeGreaterThanOrEqual(refusedAt);
    });
  });

  describe('when another system writes to the record between a stored snapshot and an ambiguous write', () => {
    it('ends unknown, never not_applied', async () => {
      await freshSandbox();
      const [target] = await addEnrollments(control, 1);
      const keyId = 'another-writer';
      const strategy = rentalPaymentReadBack(partner, { snapshotStore: store(600_000, keyId) });
      // Someone's read, stored: the next snapshot rests on it without a request.
      await rentalPaymentReadBack(partner, { snapshotStore: store(600_000, keyId) }).snapshot(
        command(target!, 9) as never,
        ctx,
      );
      counted.reads = 0;
      const snapshot = await strategy.snapshot(command(target!, 1) as never, ctx);
      expect(counted.reads).toBe(0);
      // Another system reports a payment; ours then fails without being applied.
      await new Promise((r) => setTimeout(r, 5));
      await control.patchRecord('enrollments', target!, {
        rental_payments: [{ amount_cents: 5, paid_on: '2026-10-01', period: '2026-10' }],
        updated_at: new Date().toISOString(),
      });
      await control.addFault({ method: 'POST', path: REPORT(target!), kind: 'error', status: 500, times: 1 });
      await strategy.write(command(target!, 1) as never, 'rb-w-x').catch(() => undefined);
      expect(await strategy.verdict(command(target!, 1) as never, snapshot, ctx)).toBe('unknown');
    });
  });

  describe('for decisions, when the poller read the applications moments ago', () => {
    it('takes the snapshot from that read (no request), and an ambiguous approve that landed reads back applied', async () => {
      await freshSandbox();
      const apps = await control.addRecords(
        'applications',
        Array.from({ length: 1500 }, () => ({ status: 'submitted' })),
      );
      const keyId = 'decisions';
      await pollerPass('applications', keyId);
      const strategy = applicationDecisionReadBack(partner, { snapshotStore: store(600_000, keyId) });
      const target = String(apps[3]!.id);
      const decision = { decision_id: 'dec-1', application_id: target, decision: 'approve' } as never;
      counted.reads = counted.writes = 0;
      const snapshot = await strategy.snapshot(decision, ctx);
      expect(counted.reads).toBe(0);
      expect(snapshot).toMatchObject({ found: true, status: 'submitted' });
      await control.addFault({
        method: 'POST',
        path: `/partner/v1/applications/${target}/approve`,
        kind: 'apply_then_error',
        status: 500,
        times: 1,
      });
      await strategy.write(decision, 'rb-w-dec').catch(() => undefined);
      expect(await strategy.verdict(decision, snapshot, ctx)).toBe('applied');
    }, 60_000);
  });
});
