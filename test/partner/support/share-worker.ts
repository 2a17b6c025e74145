/**
 * A process taking slots of a shared rate budget for one PMS source, from several loops at once
 * (the shares-by-source test). Env: DATABASE_URL, BUDGET_NAME, LIMIT, WINDOW_MS, SOURCE, WEIGHT,
 * LOOPS, SECONDS. Prints `ready` once connected, starts when a line comes on its standard input
 * (the test starts every worker at once, however long each took to start), and prints one JSON line:
 * when each slot was taken (epoch ms).
 */
import { createDb } from '../../../src/db/prisma.js';
import { createLogger } from '../../../src/logger.js';
import { createRateBudget } from '../../../src/partner/rate-budget.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const source = env('SOURCE');
const db = createDb(env('DATABASE_URL'), { max: 8 });
const budget = createRateBudget({
  db,
  limitPerMinute: Number(env('LIMIT')),
  logger: createLogger({ level: 'silent' }),
  name: env('BUDGET_NAME'),
  windowMs: Number(env('WINDOW_MS')),
  safetyMs: 0,
  shares: { weights: { [source]: Number(env('WEIGHT')) } },
});
const taken: number[] = [];

await db.$queryRaw`SELECT 1`;
process.stdout.write('ready\n');
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
const stopAt = Date.now() + Number(env('SECONDS')) * 1000;
await Promise.all(
  Array.from({ length: Number(env('LOOPS')) }, async () => {
    for (;;) {
      const left = stopAt - Date.now();
      if (left <= 0) return;
      try {
        await budget.acquire('write', AbortSignal.timeout(left), source);
      } catch {
        return; // the test's end came while waiting
      }
      taken.push(Date.now());
    }
  }),
);
await db.$disconnect();
process.stdout.write(`${JSON.stringify({ taken })}\n`, () => process.exit(0));
