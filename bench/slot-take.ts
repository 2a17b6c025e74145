/**
 * `npm run bench -- slots` (issue 43 item 4): the wait for a rate-budget slot when the poller's
 * 13 first passes and 4 consumers start together, each process with its own connection pool,
 * against one budget in PostgreSQL. Figures: slot wait p50/p99/max over every slot, and acquires
 * that failed (the failure: Prisma's 5 s transaction limit passed).
 *
 * "Before" loads the earlier implementation (an interactive transaction behind the advisory
 * lock) when BENCH_SLOTS_BEFORE_MODULE names a copy of it (e.g. `git show
 * 82d0ee2:src/partner/rate-budget.ts > src/partner/rate-budget-before.ts`); otherwise only the
 * current figures are measured. Env: BENCH_SLOTS_PER_PASS (20), BENCH_SLOTS_ROUNDS (3),
 * DATABASE_URL.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { parseDatabaseUrl } from '../src/db/database-url.js';
import { benchSchema, databaseBase } from './env.js';
import type { BenchResult } from './types.js';

const run$ = promisify(execFile);
const WORKER = fileURLToPath(new URL('./slot-take-worker.ts', import.meta.url));
const TSX = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url));
const CURRENT = fileURLToPath(new URL('../src/partner/rate-budget.ts', import.meta.url));

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface WorkerLine {
  waits: number[];
  failures: number;
  errors: string[];
}

async function round(url: string, module: string, slots: number): Promise<WorkerLine> {
  // Every process starts its clock at the same instant, a few seconds out (tsx start-up).
  const startAt = Date.now() + 8000;
  const roles = ['poller', 'consumer', 'consumer', 'consumer', 'consumer'];
  const lines = await Promise.all(
    roles.map(async (role) => {
      const env = {
        ...process.env,
        DATABASE_URL: url,
        ROLE: role,
        PASSES: '13',
        SLOTS: String(slots),
        START_AT: String(startAt),
        BUDGET_MODULE: module,
      };
      const { stdout } = await run$(TSX, [WORKER], { env, maxBuffer: 64 * 2 ** 20 });
      return JSON.parse(stdout.trim().split('\n').at(-1)!) as WorkerLine;
    }),
  );
  return {
    waits: lines.flatMap((l) => l.waits),
    failures: lines.reduce((a, l) => a + l.failures, 0),
    errors: lines.flatMap((l) => l.errors),
  };
}

/**
 * The lock time of one take, bounded from above: the round trip of each of 500 takes made one
 * after another on one connection (the advisory lock is held for part of that: the function's run).
 */
async function lockTime(url: string): Promise<{ p50: number; p99: number }> {
  const { connectionString, schema } = parseDatabaseUrl(url);
  const client = new pg.Client({ connectionString, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    const times: number[] = [];
    for (let i = 0; i < 500; i++) {
      const started = performance.now();
      await client.query(
        `SELECT taken FROM rate_budget_try_take('bench-lock', 'write', 0, $1, 30000, 61, 600, 10000, 1, 492, 5)`,
        [`w${i}`],
      );
      times.push(performance.now() - started);
    }
    return { p50: percentile(times, 50), p99: percentile(times, 99) };
  } finally {
    await client.end();
  }
}

let lock: { p50: number; p99: number } | undefined;

async function measure(base: string, module: string, slots: number, rounds: number) {
  const all: WorkerLine = { waits: [], failures: 0, errors: [] };
  for (let i = 0; i < rounds; i++) {
    const { url, drop } = await benchSchema('bench_slots', base);
    try {
      const r = await round(url, module, slots);
      if (module === CURRENT && i === 0) lock = await lockTime(url);
      all.waits.push(...r.waits);
      all.failures += r.failures;
      all.errors.push(...r.errors);
    } finally {
      await drop();
    }
  }
  return all;
}

export async function run(): Promise<BenchResult> {
  const base = databaseBase();
  const slots = Number(process.env.BENCH_SLOTS_PER_PASS ?? 20);
  const rounds = Number(process.env.BENCH_SLOTS_ROUNDS ?? 3);
  const figures: Record<string, number | string> = {};
  const notes = [
    `${rounds} rounds; each: 1 poller process with 13 passes and 4 consumer processes (write and read-back lanes), ${slots} slots per pass or consumer, all starting at one instant; limit 30,000/min (the window never fills: every wait is the cost of taking the slot).`,
  ];
  const variants: Array<[string, string]> = [['after', CURRENT]];
  const before = process.env.BENCH_SLOTS_BEFORE_MODULE;
  if (before) variants.unshift(['before', fileURLToPath(new URL(before, `file://${process.cwd()}/`))]);
  for (const [label, module] of variants) {
    const r = await measure(base, module, slots, rounds);
    figures[`${label}: slots taken`] = r.waits.length;
    figures[`${label}: slot wait p50 ms`] = percentile(r.waits, 50);
    figures[`${label}: slot wait p99 ms`] = percentile(r.waits, 99);
    figures[`${label}: slot wait max ms`] = Math.max(0, ...r.waits);
    figures[`${label}: acquires failed`] = r.failures;
    if (r.errors[0]) notes.push(`${label}: first failure: ${r.errors[0]}`);
  }
  if (lock) {
    figures['after: one take alone, round trip p50 ms'] = lock.p50;
    figures['after: one take alone, round trip p99 ms'] = lock.p99;
  }
  return { name: 'slots', figures, notes };
}
