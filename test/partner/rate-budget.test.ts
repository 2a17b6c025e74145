import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createRateBudget } from '../../src/partner/rate-budget.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const logger = createLogger({ level: 'silent' });
let database: TestDatabase;
let n = 0;
const budgetName = () => `test-${++n}`;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

describe('rate budget', () => {
  describe('when the window is full', () => {
    it('gives no further slot until one leaves the window', async () => {
      const budget = createRateBudget({ db: database.db, limitPerMinute: 4, logger, name: budgetName() });
      for (let i = 0; i < 4; i++) await budget.acquire('write');
      await expect(budget.acquire('write', AbortSignal.timeout(300))).rejects.toThrow();
      expect(await budget.snapshot()).toMatchObject({ used: 4, left: 0 });
    });
  });

  describe('when poll reads fill the window', () => {
    it('leaves the reserve to writes', async () => {
      const budget = createRateBudget({ db: database.db, limitPerMinute: 10, logger, name: budgetName() });
      expect(budget.capacity('poll')).toBe(9);
      for (let i = 0; i < 9; i++) await budget.acquire('poll');
      await expect(budget.acquire('poll', AbortSignal.timeout(300))).rejects.toThrow();
      await budget.acquire('write');
      expect((await budget.snapshot()).used).toBe(10);
    });
  });

  describe('when a write and a poll read both wait for a slot', () => {
    it('gives the freed slot to the write first', async () => {
      const name = budgetName();
      const options = { db: database.db, limitPerMinute: 2, logger, name, windowMs: 1500, safetyMs: 0 };
      const budget = createRateBudget(options);
      await budget.acquire('write');
      await budget.acquire('write');
      const order: string[] = [];
      const poll = budget.acquire('poll').then(() => order.push('poll'));
      await new Promise((r) => setTimeout(r, 100));
      // Another process's budget object: coordination goes through PostgreSQL only.
      const write = createRateBudget(options)
        .acquire('write')
        .then(() => order.push('write'));
      await Promise.all([poll, write]);
      expect(order).toEqual(['write', 'poll']);
    });
  });

  describe('when a 429 paused the budget', () => {
    it('makes every budget of that name wait until the pause ends', async () => {
      const name = budgetName();
      const a = createRateBudget({ db: database.db, limitPerMinute: 100, logger, name });
      const b = createRateBudget({ db: database.db, limitPerMinute: 100, logger, name });
      const until = new Date(Date.now() + 60_000);
      await a.pauseUntil(until);
      expect((await b.snapshot()).pausedUntil?.getTime()).toBe(until.getTime());
      await expect(b.acquire('write', AbortSignal.timeout(300))).rejects.toThrow();
    });
  });

  describe('when the API reports fewer requests remaining than the budget counted', () => {
    it('counts the difference as used by another system', async () => {
      const budget = createRateBudget({ db: database.db, limitPerMinute: 20, logger, name: budgetName() });
      await budget.acquire('poll');
      await budget.acquire('poll');
      await budget.learn(10, new Date(Date.now() + 60_000));
      expect(await budget.snapshot()).toMatchObject({ used: 10, left: 10 });
      // Learning the same again adds nothing.
      await budget.learn(10, new Date(Date.now() + 60_000));
      expect((await budget.snapshot()).used).toBe(10);
    });
  });
});
