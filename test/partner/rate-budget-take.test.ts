import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/db/prisma.js';
import { createLogger } from '../../src/logger.js';
import { createRateBudget } from '../../src/partner/rate-budget.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

// Issue 43 item 4: a slot is taken by one statement; contention and failures never fail a caller.
const logger = createLogger({ level: 'silent' });
let database: TestDatabase;
const pools: Db[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  // Three processes' worth of connection pools on one budget.
  for (let i = 0; i < 3; i++) pools.push(createDb(database.url, { max: 10 }));
});
afterAll(async () => {
  await Promise.all(pools.map((db) => db.$disconnect()));
  await database.drop();
});

describe('taking a rate-budget slot', () => {
  describe('when every pool asks for slots at once, more than the window holds', () => {
    it('gives exactly the limit, never one more, and fails no caller with an error', async () => {
      const limit = 50;
      const budgets = pools.map((db) =>
        createRateBudget({ db, limitPerMinute: limit, logger, name: 'contended', paceMs: 0 }),
      );
      const lanes = ['write', 'readback', 'poll'] as const;
      const results = await Promise.allSettled(
        Array.from({ length: 90 }, (_, i) =>
          budgets[i % 3]!.acquire(lanes[i % 3]!, AbortSignal.timeout(8000)),
        ),
      );
      const taken = results.filter((r) => r.status === 'fulfilled').length;
      const refused = results.filter((r) => r.status === 'rejected');
      expect(taken).toBe(limit);
      // Only the callers the window had no room for give up, and only by their own deadline.
      for (const r of refused) expect(String((r as PromiseRejectedResult).reason)).toMatch(/timeout|abort/i);
      const { rows } = await database.sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM rate_budget_slots WHERE budget = 'contended'`,
      );
      expect(rows[0]!.n).toBe(limit);
    }, 30_000);
  });

  describe('when taking a slot fails (the database does not answer the statement)', () => {
    it('tries again and the caller gets its slot', async () => {
      let failuresLeft = 2;
      // The real client, except that its first two budget statements fail as a lost connection would.
      const flaky = new Proxy(database.db, {
        get(target, prop, receiver) {
          if (prop === '$queryRaw')
            return (...args: Parameters<Db['$queryRaw']>) => {
              if (failuresLeft > 0) {
                failuresLeft--;
                return Promise.reject(new Error('Connection terminated unexpectedly'));
              }
              return target.$queryRaw(...args);
            };
          return Reflect.get(target, prop, receiver) as unknown;
        },
      });
      const budget = createRateBudget({ db: flaky, limitPerMinute: 10, logger, name: 'flaky' });
      await budget.acquire('poll', AbortSignal.timeout(10_000));
      expect(failuresLeft).toBe(0);
      expect((await budget.snapshot()).used).toBe(1);
    });
  });
});
