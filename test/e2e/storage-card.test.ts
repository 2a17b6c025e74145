import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/logger.js';
import { createRetentionPruner } from '../../src/retention/retention-pruner.js';
import { retentionRules } from '../../src/retention/retention-rules.js';
import { retentionText } from '../../src/retention/storage-router.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import { launchChromium, skipWithoutChromium } from './browser.js';

const TOKEN = 'e2e-ops-token-0123456789';
const logger = createLogger({ level: 'silent' });

interface StorageTable {
  table: string;
  retention: string;
  rowsEstimate: number;
  rows: number | null;
  rowsExact: boolean;
  tableBytes: number;
  indexBytes: number;
  lastPrunedAt: string | null;
  prunedTotal: number;
  pruned: boolean;
}

/**
 * The console's "Data and retention" (issue 42): each table's size, its retention and when it was
 * last pruned, from GET /ops/api/storage, on the overview in a real browser.
 */
describe('the storage of each table in the ops API and the console', () => {
  const config = loadConfig({});
  const app = useApp({
    ops: { opsToken: TOKEN, topicPrefix: 'e2e.', retention: retentionText(config), app: 'express' },
  });
  let database: TestDatabase;
  let base: string;
  let browser: Browser | undefined;

  beforeAll(async () => {
    ({ database, base } = app);
    await database.sql
      .query(`INSERT INTO dead_letters (dlq_topic, partition, "offset", value, headers, state, resolved_at)
      SELECT 't.dlq', 0, i::text, '{}', '{}', 'discarded', now() - interval '200 days' FROM generate_series(1, 5) i`);
    await createRetentionPruner({ db: database.db, logger, rules: retentionRules(config) }).runPass();
    await database.sql.query('ANALYZE');
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('answers each table with its size, retention and last pruning', async () => {
    const res = await fetch(`${base}/ops/api/storage`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { tables: StorageTable[]; totalBytes: number };
    const letters = body.tables.find((t) => t.table === 'dead_letters');
    expect(letters).toMatchObject({ retention: 'resolved: 90 d; open: kept', prunedTotal: 5, pruned: true });
    expect(Date.parse(letters!.lastPrunedAt!)).toBeGreaterThan(Date.now() - 60_000);
    expect(body.tables.find((t) => t.table === 'commands')).toMatchObject({
      lastPrunedAt: null,
      pruned: true,
    });
    expect(body.tables.find((t) => t.table === 'outbox')).toMatchObject({ pruned: false });
    expect(body.tables.map((t) => t.table)).not.toContain('_prisma_migrations');
    expect(body.totalBytes).toBeGreaterThan(0);
    // The ops token guards it like every ops route.
    expect((await fetch(`${base}/ops/api/storage`)).status).toBe(401);
  });

  it("counts a small table's rows where the planner's estimate is stale (issue 54: 0 rows shown)", async () => {
    // Three letters written after the last ANALYZE: the estimate still says none.
    await database.sql.query(`INSERT INTO dead_letters (dlq_topic, partition, "offset", value, headers, state)
      SELECT 't.dlq', 1, i::text, '{}', '{}', 'open' FROM generate_series(1, 3) i`);
    const res = await fetch(`${base}/ops/api/storage`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = (await res.json()) as { tables: StorageTable[] };
    expect(body.tables.find((t) => t.table === 'dead_letters')).toMatchObject({
      rowsEstimate: 0,
      rows: 3,
      rowsExact: true,
    });
  });

  it.skipIf(skipWithoutChromium)('shows them on the overview', async () => {
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1440, height: 1200 } });
    await page.goto(`${base}/ops`);
    await page.fill('#token', TOKEN);
    await page.click('#login-submit');
    const card = page.locator('[data-testid=storage]');
    await card.locator('tr[data-table=dead_letters]').waitFor();
    expect(await card.locator('[data-testid=pruned-dead_letters]').textContent()).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/,
    );
    expect(await card.locator('[data-testid=pruned-commands]').textContent()).toBe('never');
    // Counted, not estimated: no "about" for a small table.
    expect(await card.locator('[data-testid=rows-dead_letters]').textContent()).toBe('3');
    expect(await card.locator('[data-testid=pruned-outbox]').textContent()).toBe('by its owner');
    expect(await card.locator('tr[data-table=dead_letters] td').nth(1).textContent()).toBe(
      'resolved: 90 d; open: kept',
    );
  });
});
