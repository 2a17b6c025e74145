/**
 * `npm run bench -- reconcile` (issue 45): one reconciliation pass against the sandbox over HTTP,
 * on the shared rate budget in PostgreSQL at the sandbox's own limit (650/min); its figures are
 * the Partner API requests the pass needs against the minimum (the pages that hold its records,
 * per_page 1,000), per record, and its time.
 *
 * - `BENCH_RECONCILE="payments:enrollments"` (comma-separated for several sizes; default
 *   10000:3000): a month of payments, every enrollment holding its share.
 * - `BENCH_RECONCILE_ONBOARDING="registrations:older"` (default 3000:7000; empty: none): the same
 *   month with its onboarding: `registrations` customers registered and enrolled by rentbridge
 *   (the newest customers and enrollments), each enrollment with its share of 10,000 payments,
 *   on a platform that holds `older` customers besides. The enrollments list serves the payments
 *   and the enrollments in one walk; the customers list is walked from its newest.
 *
 * The commands are written straight into `commands` as the guard leaves them (`applied`, with
 * their payload); the platform holds the same records, so every item is `confirmed`.
 */
import type { SharedProducer } from '../src/kafka/shared-producer.js';
import { appliedCommand, reconcilerWith } from '../test/support/reconcile-seed.js';
import { withSandboxBench, type SandboxBench } from './sandbox-bench.js';
import type { BenchResult } from './types.js';

const CHUNK = 500;
const PER_PAGE = 1000;
const PAYMENTS_WITH_ONBOARDING = 10_000;

/** The report event is not what is measured: a producer that takes it and sends nothing. */
const NO_KAFKA = {
  get: async () => ({ send: async () => [] }),
  reset: async () => undefined,
  close: async () => undefined,
} as unknown as SharedProducer;

type Row = Record<string, unknown>;

function paymentOf(n: number) {
  const month = String((n % 12) + 1).padStart(2, '0');
  return { amount_cents: 100_000 + n, paid_on: `2026-${month}-01`, period: `2026-${month}` };
}

/** A guard row as the guard leaves an applied command, of source `bench`. */
const applied = (commandType: string, commandId: string, targetId: string, payload: Row) =>
  appliedCommand('bench', commandType, commandId, targetId, payload);

async function addInChunks(bench: SandboxBench, resource: 'customers' | 'enrollments', records: Row[]) {
  const stored: Row[] = [];
  for (let done = 0; done < records.length; done += CHUNK)
    stored.push(...(await bench.control.addRecords(resource, records.slice(done, done + CHUNK))));
  return stored;
}

/** Enrollments for `customers` (null: none), payment n in enrollment n mod E; the payment commands. */
async function seedPayments(bench: SandboxBench, payments: number, customers: Array<string | null>) {
  const shares: Array<Array<ReturnType<typeof paymentOf>>> = customers.map(() => []);
  for (let n = 0; n < payments; n++) shares[n % customers.length]!.push(paymentOf(n));
  const stored = await addInChunks(
    bench,
    'enrollments',
    shares.map((rental_payments, i) => ({
      status: 'active',
      rental_payments,
      ...(customers[i] != null && { customer_id: Number(customers[i]) }),
    })),
  );
  const ids = stored.map((r) => String(r.id));
  const rows = Array.from({ length: payments }, (_, n) => {
    const e = ids[n % ids.length]!;
    return applied('rental_payment', `pay-${n}`, e, {
      payment_id: `pay-${n}`,
      enrollment_id: Number(e),
      ...paymentOf(n),
    });
  });
  return { ids, rows };
}

/** `older` customers from January, then `registrations` rentbridge registered; their commands. */
async function seedOnboarding(bench: SandboxBench, registrations: number, older: number) {
  const person = (n: number, email: string) => ({
    first_name: 'Tenant',
    last_name: String(n),
    phone: String(5_550_000_000 + n),
    email,
  });
  await addInChunks(
    bench,
    'customers',
    Array.from({ length: older }, (_, n) => ({
      ...person(n, `older-${n}@example.com`),
      created_at: new Date(Date.parse('2026-01-01T00:00:00Z') + n * 1000).toISOString(),
    })),
  );
  const registered = Array.from({ length: registrations }, (_, n) => person(n, `reg-${n}@example.com`));
  const customers = await addInChunks(bench, 'customers', registered);
  const rows = registered.map((p, n) =>
    applied('customer_registration', `reg-${n}`, p.email, { registration_id: `reg-${n}`, ...p }),
  );
  return { customerIds: customers.map((c) => String(c.id)), rows };
}

async function pass(bench: SandboxBench) {
  const reconciler = reconcilerWith({
    db: bench.db,
    partner: bench.partner(),
    producer: NO_KAFKA,
    logger: bench.logger,
    topicPrefix: 'bench.',
  });
  const started = Date.now();
  const now = Date.now();
  const { run } = await reconciler.run(
    { since: new Date(now - 86_400_000), until: new Date(now + 1000) },
    'cli',
  );
  return { run, seconds: (Date.now() - started) / 1000 };
}

async function insert(bench: SandboxBench, rows: Row[]) {
  for (let i = 0; i < rows.length; i += 5000)
    await bench.db.command.createMany({ data: rows.slice(i, i + 5000) as never });
}

function record(
  figures: BenchResult['figures'],
  k: string,
  bench: SandboxBench,
  result: Awaited<ReturnType<typeof pass>>,
  minimum: number,
) {
  const items = Object.values(result.run.counts).reduce((sum, n) => sum + n, 0);
  figures[`${k}_seconds`] = result.seconds;
  figures[`${k}_partner_requests`] = bench.requests();
  figures[`${k}_minimum_requests`] = minimum;
  figures[`${k}_requests_vs_minimum`] = Number((bench.requests() / minimum).toFixed(2));
  figures[`${k}_requests_per_1000_records`] = Number(((1000 * bench.requests()) / items).toFixed(3));
  figures[`${k}_confirmed`] = result.run.counts.confirmed ?? 0;
  figures[`${k}_drift_items`] = items - (result.run.counts.confirmed ?? 0);
}

async function payments(count: number, enrollments: number, figures: BenchResult['figures']) {
  await withSandboxBench('reconcile', async (bench) => {
    const { rows } = await seedPayments(bench, count, Array<null>(enrollments).fill(null));
    await insert(bench, rows);
    record(
      figures,
      `${count}_over_${enrollments}`,
      bench,
      await pass(bench),
      Math.ceil(enrollments / PER_PAGE),
    );
  });
}

async function onboarding(registrations: number, older: number, figures: BenchResult['figures']) {
  await withSandboxBench('reconcile', async (bench) => {
    const seeded = await seedOnboarding(bench, registrations, older);
    const pay = await seedPayments(bench, PAYMENTS_WITH_ONBOARDING, seeded.customerIds);
    const enrollments = seeded.customerIds.map((c, n) =>
      applied('enrollment', `enr-${n}`, c, { enrollment_request_id: `enr-${n}`, customer_id: c }),
    );
    await insert(bench, [...seeded.rows, ...enrollments, ...pay.rows]);
    // The registrations are the newest customers, their enrollments the only ones: one walk each.
    const minimum = 2 * Math.ceil(registrations / PER_PAGE);
    const k = `onboarding_${registrations}_registered_${older}_older`;
    record(figures, k, bench, await pass(bench), minimum);
  });
}

const sizesOf = (text: string) =>
  text
    .split(',')
    .filter((s) => s.trim() !== '')
    .map((s) => s.split(':').map(Number) as [number, number]);

export async function run(): Promise<BenchResult> {
  const figures: BenchResult['figures'] = {};
  for (const [count, enrollments] of sizesOf(process.env.BENCH_RECONCILE ?? '10000:3000'))
    await payments(count, enrollments, figures);
  for (const [registrations, older] of sizesOf(process.env.BENCH_RECONCILE_ONBOARDING ?? '3000:7000'))
    await onboarding(registrations, older, figures);
  return {
    name: 'reconcile',
    figures,
    notes: [
      'One pass, every command applied and on the platform: requests are list pages (per_page 1000) on the poll lane, token requests not counted.',
      'Minimum: the pages that hold the records: one per 1,000 enrollments; with onboarding, as many customer pages again (the registered customers are the newest).',
      `Onboarding: registrations, their enrollments and ${PAYMENTS_WITH_ONBOARDING} payments over those enrollments in one pass. Time includes reading the commands and storing one item per command.`,
    ],
  };
}
