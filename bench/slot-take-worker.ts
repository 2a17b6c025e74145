/**
 * One process of `npm run bench -- slots` (issue 43 item 4): a poller (PASSES concurrent passes
 * taking poll slots) or a consumer (write and read-back slots), all starting at START_AT (epoch
 * ms) like processes started together. Env: DATABASE_URL, ROLE (poller | consumer), PASSES,
 * SLOTS (per pass or per consumer), LIMIT, BUDGET_MODULE (the rate budget to load; the bench's
 * "before" figures load the earlier implementation). Prints one JSON line: every wait (ms) and
 * every failed acquire.
 */
import { createDb } from '../src/db/prisma.js';
import { createLogger } from '../src/logger.js';
import type { Lane } from '../src/partner/rate-budget-types.js';
import type { createRateBudget as createRateBudgetType } from '../src/partner/rate-budget.js';

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};

const { createRateBudget } = (await import(env('BUDGET_MODULE'))) as {
  createRateBudget: typeof createRateBudgetType;
};
const role = env('ROLE');
const passes = role === 'poller' ? Number(env('PASSES', '13')) : 1;
const slots = Number(env('SLOTS', '20'));
const db = createDb(env('DATABASE_URL'));
const budget = createRateBudget({
  db,
  limitPerMinute: Number(env('LIMIT', '30000')),
  logger: createLogger({ level: 'silent' }),
  name: 'bench-slots',
});
const waits: number[] = [];
let failures = 0;
const errors: string[] = [];
// The pool's connections opened before the start, as in a process that has been up a moment.
await Promise.all(Array.from({ length: 10 }, () => db.$queryRaw`SELECT 1 AS one FROM pg_sleep(0.05)`));
await new Promise((r) => setTimeout(r, Math.max(0, Number(env('START_AT')) - Date.now())));
const lanes: Lane[] = role === 'poller' ? ['poll'] : ['write', 'readback'];
await Promise.all(
  Array.from({ length: passes }, async () => {
    for (let i = 0; i < slots; i++) {
      const lane = lanes[i % lanes.length]!;
      const started = performance.now();
      try {
        await budget.acquire(lane);
        waits.push(performance.now() - started);
      } catch (error) {
        failures++;
        if (errors.length < 3) errors.push((error as Error).message.slice(0, 200));
      }
    }
  }),
);
await db.$disconnect();
process.stdout.write(`${JSON.stringify({ role, waits, failures, errors })}\n`, () => process.exit(0));
