/**
 * `npm run bench -- reconcile` (issue 45): one reconciliation pass over a month of payments —
 * 10,000 applied payment commands over 3,000 enrollments (BENCH_RECONCILE="payments:enrollments",
 * comma-separated for several sizes) — against the sandbox over HTTP, on the shared rate budget in
 * PostgreSQL at the sandbox's own limit (650/min). Its figures: the Partner API requests the pass
 * needs against the minimum (the pages that hold the enrollments: one per 1,000), and its time.
 * The commands are written straight into `commands` as the guard leaves them (`applied`, with their
 * payload); the platform holds the same payments, so every item is `confirmed`.
 */
import { randomBytes } from 'node:crypto';
import { withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { createDb } from '../src/db/prisma.js';
import type { SharedProducer } from '../src/kafka/shared-producer.js';
import { createLogger } from '../src/logger.js';
import { createPartnerClient, createRateBudget } from '../src/partner/index.js';
import { createSourcePartners } from '../src/partner/source-partners.js';
import { createReconciler } from '../src/reconcile/reconciler.js';
import { createSandboxControl, startSandbox } from '../src/sandbox/index.js';
import type { BenchResult } from './types.js';

const CHUNK = 500;
const PER_PAGE = 1000;

/** The report event is not what is measured: a producer that takes it and sends nothing. */
const NO_KAFKA = {
  get: async () => ({ send: async () => [] }),
  reset: async () => undefined,
  close: async () => undefined,
} as unknown as SharedProducer;

function paymentOf(n: number) {
  const month = String((n % 12) + 1).padStart(2, '0');
  return { amount_cents: 100_000 + n, paid_on: `2026-${month}-01`, period: `2026-${month}` };
}

async function one(base: string, payments: number, enrollments: number, figures: BenchResult['figures']) {
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
  const schema = `bench_reconcile_${randomBytes(4).toString('hex')}`;
  const url = withSchema(base, schema);
  await migrate(url);
  const db = createDb(url, { max: 5 });
  const sandbox = await startSandbox({ port: 0 });
  const control = createSandboxControl(sandbox.url);
  let requests = 0;
  const countingFetch: typeof fetch = async (input, init) => {
    const u = new URL(input instanceof Request ? input.url : String(input));
    if (!u.pathname.startsWith('/__sandbox') && !u.pathname.endsWith('/authenticate')) requests += 1;
    return fetch(input, init);
  };
  try {
    // Payment n goes to enrollment n mod E: every enrollment holds its share of the month.
    const byEnrollment: Array<Array<ReturnType<typeof paymentOf>>> = Array.from(
      { length: enrollments },
      () => [],
    );
    for (let n = 0; n < payments; n++) byEnrollment[n % enrollments]!.push(paymentOf(n));
    const ids: number[] = [];
    for (let done = 0; done < enrollments; done += CHUNK) {
      const stored = await control.addRecords(
        'enrollments',
        byEnrollment
          .slice(done, done + CHUNK)
          .map((rental_payments) => ({ status: 'active', rental_payments })),
      );
      ids.push(...stored.map((r) => Number(r.id)));
    }
    const rows = Array.from({ length: payments }, (_, n) => ({
      source: 'bench',
      commandId: `pay-${n}`,
      commandType: 'rental_payment',
      targetId: String(ids[n % enrollments]),
      state: 'applied',
      payload: { payment_id: `pay-${n}`, enrollment_id: ids[n % enrollments], ...paymentOf(n) },
      attempts: 1,
      requestIdBase: `pay-${n}`,
      requestIds: [`pay-${n}.a1`],
      finishedAt: new Date(),
    }));
    for (let i = 0; i < rows.length; i += 5000)
      await db.command.createMany({ data: rows.slice(i, i + 5000) });

    const partner = createPartnerClient({
      baseUrl: sandbox.url,
      accessKey: 'sandbox-access-key',
      secretKey: 'sandbox-secret-key',
      logger,
      budget: createRateBudget({ db, limitPerMinute: 650, logger }),
      fetch: countingFetch,
    });
    const reconciler = createReconciler({
      db,
      producer: NO_KAFKA,
      sources: createSourcePartners({ deployment: () => partner, keys: {}, build: () => partner }),
      logger,
      topicPrefix: 'bench.',
      maxProcessingMs: 30_000,
      redriveAbsent: false,
    });
    const started = Date.now();
    const now = Date.now();
    const { run } = await reconciler.run(
      { since: new Date(now - 86_400_000), until: new Date(now + 1000) },
      'cli',
    );
    const seconds = (Date.now() - started) / 1000;
    const minimum = Math.ceil(enrollments / PER_PAGE);
    const k = `${payments}_over_${enrollments}`;
    figures[`${k}_seconds`] = seconds;
    figures[`${k}_partner_requests`] = requests;
    figures[`${k}_minimum_requests`] = minimum;
    figures[`${k}_requests_vs_minimum`] = Number((requests / minimum).toFixed(2));
    figures[`${k}_confirmed`] = run.counts.confirmed ?? 0;
    figures[`${k}_drift_items`] = Object.entries(run.counts)
      .filter(([v]) => v !== 'confirmed')
      .reduce((sum, [, n]) => sum + n, 0);
  } finally {
    await sandbox.close();
    await db.$executeRawUnsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await db.$disconnect();
  }
}

export async function run(): Promise<BenchResult> {
  const sizes = (process.env.BENCH_RECONCILE ?? '10000:3000').split(',').map((s) => s.split(':').map(Number));
  const base = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
  const figures: BenchResult['figures'] = {};
  for (const [payments, enrollments] of sizes) await one(base, payments!, enrollments!, figures);
  return {
    name: 'reconcile',
    figures,
    notes: [
      'One pass, every command applied and on the platform: requests are list pages (per_page 1000) on the poll lane, token requests not counted.',
      'Minimum: the pages that hold the enrollments, one per 1,000. Time includes reading the commands and storing one item per command.',
    ],
  };
}
