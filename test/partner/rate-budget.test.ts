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
      const budget = createRateBudget({
        db: database.db,
        limitPerMinute: 10,
        logger,
        name: budgetName(),
        paceMs: 0,
      });
      expect(budget.capacity('poll')).toBe(9);
      for (let i = 0; i < 9; i++) await budget.acquire('poll');
      await expect(budget.acquire('poll', AbortSignal.timeout(300))).rejects.toThrow();
      await budget.acquire('write');
      expect((await budget.snapshot()).used).toBe(10);
    });
  });

  describe('when writes and read-backs used part of the last window', () => {
    it('holds back a reserve sized from their demand, which the poll lane cannot take', async () => {
      const budget = createRateBudget({
        db: database.db,
        limitPerMinute: 100,
        logger,
        name: budgetName(),
        paceMs: 0,
        safetyMs: 0,
      });
      for (let i = 0; i < 20; i++) await budget.acquire('write');
      for (let i = 0; i < 10; i++) await budget.acquire('readback');
      // 30 slots in the last minute → 10 s of that demand: 5 slots (floor 2, cap 7).
      expect(budget.reserve(30)).toBe(5);
      for (let i = 0; i < 100 - 30 - 5; i++) await budget.acquire('poll');
      await expect(budget.acquire('poll', AbortSignal.timeout(300))).rejects.toThrow();
      // The reserve is there for the higher lanes at once.
      for (let i = 0; i < 5; i++)
        await budget.acquire(i % 2 ? 'readback' : 'write', AbortSignal.timeout(5000));
      expect((await budget.snapshot()).used).toBe(100);
    });

    it('never reserves more than a tenth of what the higher lanes leave, nor less than the floor', () => {
      const budget = createRateBudget({ db: database.db, limitPerMinute: 650, logger, name: budgetName() });
      expect(budget.reserve(0)).toBe(13);
      expect(budget.reserve(120)).toBe(20);
      expect(budget.reserve(500)).toBe(15);
      expect(budget.reserve(640)).toBe(13);
    });
  });

  describe('when the poll lane asks for slots faster than the limit spread over the window', () => {
    it('paces it: no more than its share in any pace interval, while a write still gets a slot', async () => {
      const budget = createRateBudget({
        db: database.db,
        limitPerMinute: 600,
        logger,
        name: budgetName(),
        windowMs: 600_000,
        safetyMs: 0,
        paceMs: 10_000,
      });
      // 600 per 10 min → 10 per 10 s.
      for (let i = 0; i < 10; i++) await budget.acquire('poll');
      await expect(budget.acquire('poll', AbortSignal.timeout(500))).rejects.toThrow();
      await budget.acquire('write', AbortSignal.timeout(5000));
      expect((await budget.snapshot()).used).toBe(11);
    });
  });

  describe('when several processes saturate the poll lane', () => {
    it('admits a write before the poll requests queued ahead of it', async () => {
      const name = budgetName();
      // A window long enough that no slot ages out before the second write asks, however slow the
      // machine: a slot freed earlier would rightly go to a waiting poll.
      const options = { db: database.db, limitPerMinute: 6, logger, name, windowMs: 10_000, safetyMs: 0 };
      const admitted: string[] = [];
      let stop = false;
      const controller = new AbortController();
      // Three "processes" (budget objects share nothing but PostgreSQL), each polling flat out.
      const pollers = [0, 1, 2].map(async () => {
        const budget = createRateBudget(options);
        while (!stop) {
          await budget.acquire('poll', controller.signal).catch(() => undefined);
          if (!stop) admitted.push('poll');
        }
      });
      const writer = createRateBudget(options);
      try {
        // The poll lane fills its share of the window (6 less the floor reserve of 1) and queues.
        await expect.poll(() => admitted.length, { timeout: 20_000 }).toBe(5);
        // The reserve: the first write goes at once, though three poll requests were queued first.
        await writer.acquire('write', AbortSignal.timeout(5000));
        admitted.push('write');
        // The window is now full: the second write waits for a slot to age out, and gets it
        // before any of the poll requests that waited longer.
        await writer.acquire('write', AbortSignal.timeout(20_000));
        admitted.push('write');
        expect(admitted.slice(0, 7)).toEqual(['poll', 'poll', 'poll', 'poll', 'poll', 'write', 'write']);
      } finally {
        stop = true;
        controller.abort();
        await Promise.all(pollers);
      }
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

    it('stores the newest report when reports come faster than they are stored', async () => {
      const budget = createRateBudget({ db: database.db, limitPerMinute: 20, logger, name: budgetName() });
      const reset = new Date(Date.now() + 60_000);
      // The first is stored at once; of the two that come meanwhile only the newer is stored after it.
      await Promise.all([budget.learn(15, reset), budget.learn(10, reset), budget.learn(12, reset)]);
      // 15 left: 5 used elsewhere; then 12 left: 3 more. (Storing 10 as well would make it 10.)
      expect((await budget.snapshot()).used).toBe(8);
    });

    it("drops a report of another limit's window (the token budget told the 650/min count)", async () => {
      const budget = createRateBudget({ db: database.db, limitPerMinute: 2500, logger, name: budgetName() });
      await budget.acquire('write');
      // The sign-in's answer, counted by the 650/min limit: nothing of this budget's window.
      await budget.learn(649, new Date(Date.now() + 60_000), 650);
      expect((await budget.snapshot()).used).toBe(1);
      // Its own limit's answer is learned.
      await budget.learn(2490, new Date(Date.now() + 60_000), 2500);
      expect((await budget.snapshot()).used).toBe(10);
    });
  });
});
