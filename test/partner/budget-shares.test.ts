import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { registry } from '../../src/metrics.js';
import { forBudgetSource } from '../../src/partner/partner-client.js';
import { createRateBudget } from '../../src/partner/rate-budget.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const WORKER = fileURLToPath(new URL('./support/share-worker.ts', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
const logger = createLogger({ level: 'silent' });
const WINDOW_MS = 2000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

interface Worker {
  source: string;
  weight: number;
  loops: number;
}

/**
 * Each worker is its own process taking write slots for its source from `loops` loops at once, on
 * one budget of 20 a (shortened) window of 2 s (ten slots a second; 20 in a window, so a 3:1 share
 * is whole: 15 and 5). Returns each source's share of the slots taken while both
 * were busy: after each had taken its first slot and a window had passed (the first window fills
 * before anyone waits), until the first of them stopped.
 */
async function shares(budget: string, workers: Worker[]): Promise<Record<string, number>> {
  const children = workers.map((w) => {
    const child = spawn(TSX, [WORKER], {
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        BUDGET_NAME: budget,
        LIMIT: '20',
        WINDOW_MS: String(WINDOW_MS),
        SOURCE: w.source,
        WEIGHT: String(w.weight),
        LOOPS: String(w.loops),
        SECONDS: '12',
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    const ready = new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.startsWith('ready\n')) resolve();
      }),
    );
    const done = new Promise<string>((resolve) => child.once('exit', () => resolve(out)));
    return { source: w.source, child, ready, done };
  });
  // Every worker connected first: then all start together.
  await Promise.all(children.map((c) => c.ready));
  // The window filled evenly first (a slot every 100 ms, for no source), as a saturated budget's
  // is: its slots then free one at a time. Slots taken all at once would free all at once, and in
  // such a cluster each source takes as many as it has waiters (decision 055, consequences).
  const filler = createRateBudget({
    db: database.db,
    limitPerMinute: 20,
    logger,
    name: budget,
    windowMs: WINDOW_MS,
    safetyMs: 0,
  });
  for (let i = 0; i < 20; i++) {
    await filler.acquire('write');
    await sleep(WINDOW_MS / 20);
  }
  for (const c of children) c.child.stdin.end('go\n');
  const results = await Promise.all(
    children.map(async (c) => {
      const line = (await c.done).trim().split('\n').at(-1)!;
      return { source: c.source, taken: (JSON.parse(line) as { taken: number[] }).taken };
    }),
  );
  const from = Math.max(...results.map((r) => r.taken[0] ?? Infinity)) + WINDOW_MS;
  const to = Math.min(...results.map((r) => r.taken.at(-1) ?? -Infinity));
  const busy = results.map((r) => ({
    source: r.source,
    n: r.taken.filter((t) => t >= from && t <= to).length,
  }));
  const total = busy.reduce((a, b) => a + b.n, 0);
  // Enough slots in the busy time to tell a share from chance (10 a second for several seconds).
  expect(total).toBeGreaterThanOrEqual(30);
  return Object.fromEntries(busy.map((b) => [b.source, b.n / total]));
}

describe('rate budget shared by source', () => {
  describe('when two processes wait for slots for two sources, one with four times the waiters of the other', () => {
    it('serves the two sources round-robin: half the slots each, not four to one', async () => {
      const share = await shares('shares-equal', [
        { source: 'bigpms', weight: 1, loops: 8 },
        { source: 'smallpms', weight: 1, loops: 2 },
      ]);
      expect(share.smallpms).toBeGreaterThanOrEqual(0.4);
      expect(share.smallpms).toBeLessThanOrEqual(0.6);
    }, 60_000);
  });

  describe('when a source weighs 3 (PMS_WEIGHTS) and the other 1, with twice its waiters', () => {
    it('gives the heavier source three slots to one', async () => {
      const share = await shares('shares-weighted', [
        { source: 'acme', weight: 3, loops: 3 },
        { source: 'globex', weight: 1, loops: 6 },
      ]);
      expect(share.acme).toBeGreaterThanOrEqual(0.68);
      expect(share.acme).toBeLessThanOrEqual(0.82);
    }, 60_000);
  });

  describe("when a source's first request comes while another source's burst runs", () => {
    it('paces the burst through the window, so the newcomer takes the next paced slot, not one after the window', async () => {
      const name = 'shares-paced';
      // 60 a (shortened) window of 6 s: paced at 10 a second (the limit spread over the window).
      const options = { db: database.db, limitPerMinute: 60, logger, name, windowMs: 6000, safetyMs: 0 };
      const bursting = createRateBudget(options);
      let bigTaken = 0;
      let stop = false;
      const controller = new AbortController();
      // The month-end: 12 loops taking write slots for bigpms as fast as they are given.
      const loops = Array.from({ length: 12 }, async () => {
        while (!stop) {
          await bursting.acquire('write', controller.signal, 'bigpms').catch(() => undefined);
          if (!stop) bigTaken++;
        }
      });
      try {
        await expect.poll(() => bigTaken, { timeout: 20_000 }).toBeGreaterThanOrEqual(15);
        // Another process's first request for smallpms.
        await createRateBudget(options).acquire('write', AbortSignal.timeout(20_000), 'smallpms');
        const bigBefore = bigTaken;
        // Unpaced, bigpms would have spent all 60 slots of the window in its first moments and
        // smallpms would wait for them to age out; paced, it waits for the next paced slot.
        expect(bigBefore).toBeLessThan(60);
      } finally {
        stop = true;
        controller.abort();
        await Promise.all(loops);
      }
      // No second of the burst holds more than its catch-up and a second at its rate (decision 060:
      // rate 60 / (6 s × 1.25), tolerance 1.5 s, so at most 8 × 2.5 + 1 = 21; unpaced, 60), read
      // from the slots themselves.
      const { rows } = await database.sql.query<{ busiest: number }>(
        `SELECT max(n)::int AS busiest FROM (
           SELECT (SELECT count(*) FROM rate_budget_slots o
                   WHERE o.budget = s.budget AND o.taken_at > s.taken_at - interval '1 second'
                     AND o.taken_at <= s.taken_at) AS n
           FROM rate_budget_slots s WHERE s.budget = $1) x`,
        [name],
      );
      expect(rows[0]!.busiest).toBeLessThanOrEqual(21);
    }, 60_000);
  });

  describe('when the writes come back after a quiet stretch (a backlog left by a Kafka outage)', () => {
    it('takes a fifth of the limit at once, then one slot per 1/rate, never the whole window', async () => {
      // 600 a window of 60 s: rate 600 / 75 = 8 a second, tolerance 15 s, so 120 at once.
      const rate = 600 / 75;
      const take = async () =>
        (
          await database.sql.query<{ taken: boolean; reason: string; wait_ms: number }>(
            `SELECT * FROM rate_budget_try_take('catch-up', 'write', 1, 'w', 600, 60, 12, 10000, 1, 10,
               30, 'bigpms', 1)`,
          )
        ).rows[0]!;
      const started = performance.now();
      let taken = 0;
      let held: { reason: string; wait_ms: number } | undefined;
      while (!held && taken < 600) {
        const row = await take();
        if (row.taken) taken++;
        else held = row;
      }
      const elapsed = (performance.now() - started) / 1000;
      // Its first 120 at once (before #52's pace, 10 at most), plus what the rate adds while they
      // are taken; then held by the pace, for about one slot's time, not for the window.
      expect(taken).toBeGreaterThanOrEqual(120);
      expect(taken).toBeLessThanOrEqual(120 + Math.ceil(rate * elapsed) + 1);
      expect(held).toMatchObject({ reason: 'paced' });
      expect(held!.wait_ms).toBeLessThanOrEqual(1000 / rate + 5);
    });
  });

  describe("when a call is made in a source's scope (the guard runs each command in its own)", () => {
    it('counts its slot to that source, and a call outside any scope to none', async () => {
      const budget = createRateBudget({ db: database.db, limitPerMinute: 10, logger, name: 'shares-scope' });
      await forBudgetSource('acme', async () => {
        await budget.acquire('write');
        await budget.acquire('readback');
      });
      await budget.acquire('write');
      await budget.acquire('poll', undefined, 'acme'); // the poll lane takes no share
      const { rows } = await database.sql.query<{ lane: string; source: string | null }>(
        `SELECT lane, source FROM rate_budget_slots WHERE budget = 'shares-scope' ORDER BY id`,
      );
      expect(rows).toEqual([
        { lane: 'write', source: 'acme' },
        { lane: 'readback', source: 'acme' },
        { lane: 'write', source: null },
        { lane: 'poll', source: null },
      ]);
    });
  });

  describe('on /metrics', () => {
    const line = (text: string, name: string, source: string) =>
      new RegExp(`^${name}\\{source="${source}"\\} ([0-9.e+-]+)$`, 'm').exec(text)?.[1];

    it('shows per source the requests used, the commands waiting and the oldest wait, every configured source from 0', async () => {
      const budget = createRateBudget({
        db: database.db,
        limitPerMinute: 2,
        logger,
        name: 'shares-metrics',
        shares: { sources: ['acme', 'globex', 'initech'] },
      });
      await budget.acquire('write', undefined, 'acme');
      await budget.acquire('readback', undefined, 'acme');
      // The window is full: globex's write waits, and is seen waiting from every process.
      const waiting = new AbortController();
      const globex = budget.acquire('write', waiting.signal, 'globex').catch(() => undefined);
      let text = '';
      for (let i = 0; i < 200; i++) {
        text = await registry.metrics();
        if (Number(line(text, 'rentbridge_rate_budget_source_oldest_wait_seconds', 'globex') ?? 0) > 0) break;
        await sleep(50);
      }
      waiting.abort();
      await globex;
      expect(line(text, 'rentbridge_rate_budget_source_used', 'acme')).toBe('2');
      expect(line(text, 'rentbridge_rate_budget_source_used', 'initech')).toBe('0');
      expect(line(text, 'rentbridge_rate_budget_source_waiting', 'globex')).toBe('1');
      expect(line(text, 'rentbridge_rate_budget_source_waiting', 'initech')).toBe('0');
      expect(
        Number(line(text, 'rentbridge_rate_budget_source_oldest_wait_seconds', 'globex')),
      ).toBeGreaterThan(0);
      expect(text).toMatch(
        /^rentbridge_rate_budget_source_requests_total\{source="acme",lane="readback"\} 1$/m,
      );
      expect(text).toMatch(
        /^rentbridge_rate_budget_source_requests_total\{source="initech",lane="write"\} 0$/m,
      );
    }, 30_000);
  });
});
