import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createRateBudget } from '../../src/partner/rate-budget.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { serveOverview, type OverviewServer } from '../support/overview-server.js';

/** Issue 52 item 3: the console's Partner API stage shows each PMS source's share of the budget. */
describe("the console's Partner API stage", () => {
  let database: TestDatabase;
  let served: OverviewServer;

  beforeAll(async () => {
    database = await createTestDatabase();
    served = await serveOverview(database.db);
  });
  afterAll(async () => {
    await served?.close();
    await database?.drop();
  });

  it("shows each source's share of the last minute's writes and read-backs, and its commands waiting", async () => {
    const budget = createRateBudget({
      db: database.db,
      limitPerMinute: 4,
      logger: createLogger({ level: 'silent' }),
      shares: { sources: ['acme', 'globex'] },
    });
    await budget.acquire('write', undefined, 'acme');
    await budget.acquire('readback', undefined, 'acme');
    await budget.acquire('write', undefined, 'acme');
    await budget.acquire('write', undefined, 'globex');
    // The window is full: globex's next write waits.
    const waiting = new AbortController();
    const globex = budget.acquire('write', waiting.signal, 'globex').catch(() => undefined);
    try {
      let figures: Record<string, string | number> = {};
      for (let i = 0; i < 100; i++) {
        const stage = await served.stage('partner');
        figures = Object.fromEntries(stage.figures.map((f) => [f.label, f.value]));
        if (String(figures['share of source globex, last minute']).includes('waiting')) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(figures['share of source acme, last minute']).toBe('3 requests (75 %)');
      expect(figures['share of source globex, last minute']).toMatch(
        /^1 request \(25 %\) · 1 waiting, oldest \d+ ?s$/,
      );
      expect(figures['budget write, last minute']).toMatch(/^3/);
    } finally {
      waiting.abort();
      await globex;
    }
  });
});
