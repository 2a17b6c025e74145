/**
 * A separate process sharing the rate budget (run with tsx by the two-process test and by
 * bench/budget.ts). Env: DATABASE_URL, SANDBOX_URL, LIMIT, SECONDS, LANES (comma list, one loop
 * per entry), BUDGET_NAME; START_AT (epoch ms, optional): the moment to begin, so processes started
 * one after the other begin together. Prints one JSON line: requests made, answers by status, waits
 * per lane.
 */
import { createDb } from '../../../src/db/prisma.js';
import { createLogger } from '../../../src/logger.js';
import { createPartnerClient } from '../../../src/partner/partner-client.js';
import { createRateBudget } from '../../../src/partner/rate-budget.js';
import type { Lane, RateBudget } from '../../../src/partner/rate-budget-types.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const seconds = Number(env('SECONDS'));
const lanes = env('LANES').split(',') as Lane[];
const db = createDb(env('DATABASE_URL'), { max: 4 });
const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'silent' });
const inner = createRateBudget({
  db,
  limitPerMinute: Number(env('LIMIT')),
  logger,
  name: env('BUDGET_NAME'),
  ...(process.env.PACE_MS !== undefined && { paceMs: Number(process.env.PACE_MS) }),
});
const waits: Record<string, number[]> = {};
// Times every wait for a slot, by lane (the benchmark's p50/p99).
const budget: RateBudget = {
  ...inner,
  async acquire(lane, signal) {
    const started = performance.now();
    await inner.acquire(lane, signal);
    (waits[lane] ??= []).push(performance.now() - started);
  },
};
const statuses: Record<string, number> = {};
const countingFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  statuses[res.status] = (statuses[res.status] ?? 0) + 1;
  return res;
};
const client = createPartnerClient({
  baseUrl: env('SANDBOX_URL'),
  accessKey: 'sandbox-access-key',
  secretKey: 'sandbox-secret-key',
  budget,
  logger,
  fetch: countingFetch,
});

const startAt = Number(process.env.START_AT ?? 0);
if (startAt > Date.now()) await new Promise((resolve) => setTimeout(resolve, startAt - Date.now()));
const deadline = Date.now() + seconds * 1000;
let requests = 0;
let failures = 0;
await Promise.all(
  lanes.map(async (lane) => {
    while (Date.now() < deadline) {
      try {
        await client.listPage(
          'applications',
          { per_page: 5 },
          { lane, signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) },
        );
        requests++;
      } catch (error) {
        if (Date.now() >= deadline) break;
        failures++;
        logger.error({ err: error }, 'worker call failed');
      }
    }
  }),
);
await db.$disconnect();
// Exits once its line is written: a handle left open (a keep-alive socket, a pool) must not keep
// the process, and the test waiting for it, alive (a CI run timed out at 60 s waiting here).
process.stdout.write(`${JSON.stringify({ requests, failures, statuses, waits })}\n`, () => process.exit(0));
