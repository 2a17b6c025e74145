/**
 * `npm run bench -- writes650` (issue 43 item 5): a month-end burst at the spec's real limit, and
 * the `unknown` share under the guard's fault mix, before (one page per snapshot, paged from page
 * 1, pages shared for 1 s) and after (snapshots from the latest stored read, SNAPSHOT_MAX_AGE_MS
 * 600 s, after one poller pass).
 *
 * 1. Burst: the sandbox and the shared rate budget (src/partner/rate-budget.ts) at 650 requests a
 *    minute; BENCH_650_BURST (default 325) payments over BENCH_650_ENROLLMENTS (default 3000)
 *    enrollments, 20 at a time, each its snapshot then its write (a 429 answer is counted, waited
 *    for and the payment written again, as the guard does) → how long the burst took against its
 *    minimum N / 650 minutes (the budget's window is 61 s, so the floor it allows is N / 650 × 61 s),
 *    requests per payment, 429s.
 * 2. Faults (limit raised): BENCH_650_FAULTS (default 120) payments whose write fails by the mix
 *    of the chaos run's fault injector: a third `apply_then_error` (applied, then 500), a third
 *    `error` (500, not applied), a third `apply_then_timeout`; each read back as the guard does
 *    (snapshot, write, verdict) → the share that ends `unknown`, and any wrong verdict.
 */
import { randomBytes } from 'node:crypto';
import { createDb, type Db } from '../src/db/prisma.js';
import { rentalPaymentReadBack } from '../src/command-types/rental-payments/rental-payment-read-back.js';
import { createSnapshotPageCache } from '../src/guard/read-backs/read-back.js';
import { createSnapshotStore } from '../src/guard/read-backs/snapshot-store.js';
import { createLogger } from '../src/logger.js';
import { createPartnerClient, createRateBudget, type RateBudget } from '../src/partner/index.js';
import { createSandboxControl, startSandbox } from '../src/dev/sandbox/index.js';
import { addEnrollments } from '../test/support/enrollments.js';
import { benchSchema } from './env.js';
import type { BenchResult } from './types.js';
import { pollerPass } from './write-budget.js';

const logger = createLogger({ level: 'silent' });
const ctx = { nextReadId: () => `rb-${randomBytes(6).toString('hex')}` };
const LIMIT = 650;
const FAULTS = ['apply_then_error', 'error', 'apply_then_timeout'] as const;

export async function run(): Promise<BenchResult> {
  const enrollments = Number(process.env.BENCH_650_ENROLLMENTS ?? 3000);
  const burstSize = Number(process.env.BENCH_650_BURST ?? 325);
  const faultCount = Number(process.env.BENCH_650_FAULTS ?? 120);
  const { url, drop } = await benchSchema('bench_w650');
  const db = createDb(url);
  const sandbox = await startSandbox({ port: 0 });
  const control = createSandboxControl(sandbox.url);
  const counted = { reads: 0, writes: 0, throttled: 0 };
  const client = (budget?: RateBudget) =>
    createPartnerClient({
      baseUrl: sandbox.url,
      accessKey: 'sandbox-access-key',
      secretKey: 'sandbox-secret-key',
      logger,
      timeoutMs: 2000,
      ...(budget && { budget }),
      fetch: async (input, init) => {
        const path = new URL(String(input instanceof Request ? input.url : input)).pathname;
        const response = await fetch(input, init);
        if (path === '/partner/v1/enrollments') counted.reads++;
        else if (path.endsWith('/report_rental_payments')) counted.writes++;
        if (response.status === 429) counted.throttled++;
        return response;
      },
    });
  const figures: Record<string, number | string> = {};
  const seed = async () => {
    await control.reset();
    return addEnrollments(control, enrollments);
  };
  try {
    const variants = (process.env.BENCH_650_VARIANTS ?? 'before,after').split(',') as Array<
      'before' | 'after'
    >;
    for (const variant of variants) {
      // 1. The burst at 650/min.
      const seeded = await seed();
      const store =
        variant === 'after'
          ? createSnapshotStore({ db, keyId: `w650-${variant}`, maxAgeMs: 600_000 })
          : undefined;
      // The poller's pass (3 pages), before the limit is set: it is not the burst's cost.
      await control.setConfig({ rate_limit_per_minute: 1_000_000 });
      if (store) await pollerPass(db, client(), store);
      await control.setConfig({ rate_limit_per_minute: LIMIT });
      const budget = createRateBudget({ db, limitPerMinute: LIMIT, logger, name: `w650-${variant}` });
      const strategy = rentalPaymentReadBack(client(budget), {
        snapshotCache: createSnapshotPageCache({ ttlMs: 1000 }),
        ...(store && { snapshotStore: store }),
      });
      const step = Math.max(1, Math.floor(seeded.length / burstSize));
      const burst = seeded.filter((_, i) => i % step === 0).slice(0, burstSize);
      counted.reads = counted.writes = counted.throttled = 0;
      let next = 0;
      const started = Date.now();
      const progress = setInterval(
        () =>
          console.log(
            `  ${variant}: ${next} of ${burst.length} payments started, ${counted.reads} reads, ${counted.writes} writes, ${counted.throttled} 429s`,
          ),
        15_000,
      );
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          while (next < burst.length) {
            const id = burst[next++]!;
            const c = {
              payment_id: `p${id}`,
              enrollment_id: String(id),
              amount_cents: 1000,
              paid_on: '2026-11-01',
            };
            for (;;) {
              try {
                await strategy.snapshot(c as never, ctx);
                await strategy.write(c as never, `w-${id}-${randomBytes(3).toString('hex')}`);
                break;
              } catch (error) {
                if ((error as { status?: number }).status !== 429) throw error;
                await new Promise((r) => setTimeout(r, 1000));
              }
            }
          }
        }),
      );
      clearInterval(progress);
      const seconds = (Date.now() - started) / 1000;
      const label = `${variant}: burst of ${burst.length} over ${enrollments} enrollments at ${LIMIT}/min`;
      figures[`${label}: seconds`] = seconds;
      figures[`${label}: minimum N/650 min, seconds`] = (burst.length / LIMIT) * 60;
      figures[`${label}: requests per payment`] = (counted.reads + counted.writes) / burst.length;
      figures[`${label}: 429 answers`] = counted.throttled;
      const applied = (await control.records('enrollments')).filter(
        (r) => (r.rental_payments as unknown[]).length > 0,
      ).length;
      figures[`${label}: enrollments with a payment / burst`] = `${applied} / ${burst.length}`;
      await budget.close?.();

      // 2. The unknown share under the fault mix.
      figures[`${variant}: fault mix, ${faultCount} ambiguous writes: unknown share %`] = await faultMix(
        variant,
        db,
        client,
        seed,
        control,
        faultCount,
        figures,
      );
    }
  } finally {
    await sandbox.close();
    await db.$disconnect();
    await drop();
  }
  return {
    name: 'writes650',
    figures,
    notes: [
      `Burst: sandbox and shared budget at ${LIMIT}/min (a 61 s window: at most ${LIMIT} requests per 61 s), payments 20 at a time, each a snapshot and a write; "after" ran one poller pass first, outside the measured window. Client time-out 2 s.`,
      'Faults: the rate limit raised; each payment written once with a fault on its write, then read back; a wrong verdict is applied for a write that was not, or not_applied for one that was.',
    ],
  };
}

async function faultMix(
  variant: 'before' | 'after',
  db: Db,
  client: () => ReturnType<typeof createPartnerClient>,
  seed: () => Promise<number[]>,
  control: ReturnType<typeof createSandboxControl>,
  n: number,
  figures: Record<string, number | string>,
): Promise<number> {
  const ids = await seed();
  await control.setConfig({ rate_limit_per_minute: 1_000_000 });
  const partner = client();
  const store =
    variant === 'after' ? createSnapshotStore({ db, keyId: `fm-${variant}`, maxAgeMs: 600_000 }) : undefined;
  if (store) await pollerPass(db, partner, store);
  const strategy = rentalPaymentReadBack(partner, {
    snapshotCache: createSnapshotPageCache({ ttlMs: 1000 }),
    ...(store && { snapshotStore: store }),
  });
  const step = Math.max(1, Math.floor(ids.length / n));
  const chosen = ids.filter((_, i) => i % step === 0).slice(0, n);
  const verdicts = { applied: 0, not_applied: 0, unknown: 0, wrong: 0 };
  for (const [i, id] of chosen.entries()) {
    const kind = FAULTS[i % FAULTS.length]!;
    const c = { payment_id: `f${id}`, enrollment_id: String(id), amount_cents: 2000, paid_on: '2026-11-02' };
    const snapshot = await strategy.snapshot(c as never, ctx);
    await control.addFault({
      method: 'POST',
      path: `/partner/v1/enrollments/${id}/report_rental_payments`,
      kind,
      status: 500,
      ...(kind === 'apply_then_timeout' && { delay_ms: 3000 }),
      times: 1,
    });
    await strategy.write(c as never, `wf-${id}`).catch(() => undefined);
    const verdict = await strategy.verdict(c as never, snapshot, ctx);
    verdicts[verdict]++;
    const landed = kind !== 'error';
    if ((verdict === 'applied' && !landed) || (verdict === 'not_applied' && landed)) verdicts.wrong++;
  }
  figures[`${variant}: fault mix verdicts (applied / not_applied / unknown / wrong)`] =
    `${verdicts.applied} / ${verdicts.not_applied} / ${verdicts.unknown} / ${verdicts.wrong}`;
  return (verdicts.unknown / chosen.length) * 100;
}
