/**
 * `npm run bench -- writes` (issue 43 items 1 and 5): Partner requests per payment, before (one
 * page per snapshot, paged from page 1, pages shared for 1 s) and after (snapshots from the
 * latest stored read, the poller's pass included, SNAPSHOT_MAX_AGE_MS 600 s), on the sandbox with
 * its rate limit raised (the limit is not what is measured). What the guard does for a payment
 * whose write answers: its snapshot, then its write; requests counted at the client's fetch.
 *
 * Env: BENCH_WRITES_ENROLLMENTS (3000,20000), BENCH_WRITES_BURST (300), BENCH_WRITES_TRICKLE (60),
 * BENCH_WRITES_TRICKLE_GAP_MS (1000: one payment a second),
 * DATABASE_URL.
 */
import { randomBytes } from 'node:crypto';
import { createDb, type Db } from '../src/db/prisma.js';
import { rentalPaymentReadBack } from '../src/command-types/rental-payments/rental-payment-read-back.js';
import { createSnapshotPageCache } from '../src/guard/read-backs/read-back.js';
import { createSnapshotStore } from '../src/guard/read-backs/snapshot-store.js';
import { createLogger } from '../src/logger.js';
import { createPartnerClient } from '../src/partner/index.js';
import { runResourcePass } from '../src/poller/resource-pass.js';
import { createSandboxControl, startSandbox } from '../src/dev/sandbox/index.js';
import { addEnrollments } from '../test/support/enrollments.js';
import { benchSchema } from './env.js';
import type { BenchResult } from './types.js';

const logger = createLogger({ level: 'silent' });
const ctx = { nextReadId: () => `rb-${randomBytes(6).toString('hex')}` };

export async function run(): Promise<BenchResult> {
  const sizes = (process.env.BENCH_WRITES_ENROLLMENTS ?? '3000,20000').split(',').map(Number);
  const burstSize = Number(process.env.BENCH_WRITES_BURST ?? 300);
  const trickleSize = Number(process.env.BENCH_WRITES_TRICKLE ?? 60);
  const gapMs = Number(process.env.BENCH_WRITES_TRICKLE_GAP_MS ?? 1000);
  const { url, drop } = await benchSchema('bench_writes');
  const db = createDb(url);
  const sandbox = await startSandbox({ port: 0 });
  const control = createSandboxControl(sandbox.url);
  const counted = { reads: 0, writes: 0 };
  const partner = createPartnerClient({
    baseUrl: sandbox.url,
    accessKey: 'sandbox-access-key',
    secretKey: 'sandbox-secret-key',
    logger,
    fetch: async (input, init) => {
      const path = new URL(String(input instanceof Request ? input.url : input)).pathname;
      if (path === '/partner/v1/enrollments') counted.reads++;
      else if (path.endsWith('/report_rental_payments')) counted.writes++;
      return fetch(input, init);
    },
  });
  const figures: Record<string, number | string> = {};
  try {
    for (const n of sizes) {
      for (const variant of ['before', 'after'] as const) {
        await control.reset();
        await control.setConfig({ rate_limit_per_minute: 1_000_000 });
        const ids = await addEnrollments(control, n);
        const keyId = `${variant}-${n}`;
        const store = variant === 'after' ? createSnapshotStore({ db, keyId, maxAgeMs: 600_000 }) : undefined;
        if (store) await pollerPass(db, partner, store);
        const strategy = rentalPaymentReadBack(partner, {
          snapshotCache: createSnapshotPageCache({ ttlMs: 1000 }),
          ...(store && { snapshotStore: store }),
        });
        const pay = async (id: number, i: number) => {
          const c = {
            payment_id: `p${id}-${i}`,
            enrollment_id: String(id),
            amount_cents: 1000 + i,
            paid_on: '2026-11-01',
          };
          await strategy.snapshot(c as never, ctx);
          await strategy.write(c as never, `w-${id}-${i}`);
        };
        const step = Math.max(1, Math.floor(n / burstSize));
        const burst = ids.filter((_, i) => i % step === 0).slice(0, burstSize);
        counted.reads = counted.writes = 0;
        let next = 0;
        await Promise.all(
          Array.from({ length: 20 }, async () => {
            while (next < burst.length) await pay(burst[next++]!, 0);
          }),
        );
        figures[`${variant}: ${n} enrollments, burst of ${burst.length}: requests per payment`] =
          (counted.reads + counted.writes) / burst.length;
        const trickle = ids
          .filter((_, i) => i % Math.max(1, Math.floor(n / trickleSize)) === 1)
          .slice(0, trickleSize);
        counted.reads = counted.writes = 0;
        for (const id of trickle) {
          await pay(id, 1);
          await new Promise((r) => setTimeout(r, gapMs));
        }
        figures[`${variant}: ${n} enrollments, trickle of ${trickle.length}: requests per payment`] =
          (counted.reads + counted.writes) / trickle.length;
      }
    }
  } finally {
    await sandbox.close();
    await db.$disconnect();
    await drop();
  }
  return {
    name: 'writes',
    figures,
    notes: [
      `burst: ${burstSize} payments spread over the enrollments, 20 at a time; trickle: ${trickleSize} payments, ${gapMs} ms apart. "after" runs one poller pass over enrollments first (its requests are the poller's, not counted here).`,
      'The sandbox rate limit is raised: the figures count requests, not time at 650/min.',
    ],
  };
}

/** One poller pass over the enrollments, its reads stored as snapshots in `store`. */
export async function pollerPass(
  db: Db,
  partner: ReturnType<typeof createPartnerClient>,
  store: ReturnType<typeof createSnapshotStore>,
) {
  await runResourcePass({
    partner,
    db,
    logger,
    resource: 'enrollments',
    backfillFrom: null,
    progressEveryPages: 1000,
    perPage: 1000,
    now: () => new Date(),
    hooks: {},
    isStopping: () => false,
    snapshots: store,
  });
}
