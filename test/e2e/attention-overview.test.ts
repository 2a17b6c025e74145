import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXPECTED_ROLES } from '../../src/ops/role-heartbeat.js';
import { buildDecisionLetter, seedLetter } from '../dead-letters/build-dead-letter.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import { skipWithoutChromium } from './browser.js';

/**
 * The overview's first screen (issue 54, decision 057) at 1280×800: the whole flow as one band
 * and what needs a person now. Healthy, the list is empty and every stage shows; with a stopped
 * consumer, open dead letters and a backlog past its bound, each is in the first screen with its
 * count, and its link leads where one acts.
 */

const TOKEN = 'e2e-attention-token-0123456789';
const VIEWPORT = { width: 1280, height: 800 };
const STAGES = ['receiver', 'outbox', 'relay', 'kafka', 'consumers', 'partner', 'poller', 'dead-letters'];

describe.skipIf(skipWithoutChromium)('the overview leads with what needs a person', () => {
  const app = useApp({ ops: { opsToken: TOKEN, topicPrefix: 'e2e.', app: 'express' }, browser: true });
  let database: TestDatabase;
  let page: Page;
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    database = app.database;
    page = await app.browser.newPage({ viewport: VIEWPORT });
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
  });

  /** Every role reported just now, but those named. */
  async function heartbeats(except: string[]): Promise<void> {
    await database.sql.query('DELETE FROM role_heartbeats');
    const roles = EXPECTED_ROLES.filter((r) => !except.includes(r));
    await database.sql.query(
      `INSERT INTO role_heartbeats (role, instance, seen_at) SELECT unnest($1::text[]), 'test:1', now()`,
      [roles],
    );
  }

  /** True when the element's box lies wholly inside the first screen. */
  const inFirstScreen = (selector: string) =>
    page.locator(selector).evaluate((n, height) => {
      const r = n.getBoundingClientRect();
      return r.height > 0 && r.top >= 0 && r.bottom <= height;
    }, VIEWPORT.height);

  it('shows every stage in one band and an empty list when all is well, with no console error', async () => {
    await heartbeats([]);
    await page.goto(`${app.base}/ops/`);
    await page.waitForSelector('#login', { state: 'visible' });
    await page.fill('#token', TOKEN);
    await page.click('#login-submit');
    await page.waitForSelector('#band .band-stage');
    const shown = await page
      .locator('#band .band-stage')
      .evaluateAll((ns) => ns.map((n) => n.getAttribute('data-band')));
    expect(shown).toEqual(STAGES);
    for (const id of STAGES) expect(await inFirstScreen(`#band [data-band="${id}"]`), id).toBe(true);
    // The band is one row: every stage at the same height.
    const tops = await page
      .locator('#band .band-stage')
      .evaluateAll((ns) => ns.map((n) => n.getBoundingClientRect().top));
    expect(new Set(tops).size).toBe(1);
    expect(await page.textContent('[data-testid=attention-none]')).toBe('Nothing needs a person now.');
    expect(await inFirstScreen('#attention')).toBe(true);
    expect(await page.title()).toBe('rentbridge ops');
    // Loading before sign-in asked "who is signed in?" without an error; the icon was found.
    expect(consoleErrors).toEqual([]);
    expect((await fetch(`${app.base}/ops/favicon.ico`)).status).toBe(200);
  });

  it('lists a stopped consumer, open dead letters and a backlog in the first screen, each with its count and link', async () => {
    await heartbeats(['consumer:rental-payments']);
    for (const reason of ['rejected', 'rejected', 'exhausted'] as const) {
      await seedLetter(database.db, 'e2e.', buildDecisionLetter('e2e.', { reason, errorCode: 'x' }));
    }
    // Two relay processes gone without stopping (their rows left behind) within ten minutes.
    await database.sql.query(`
      INSERT INTO role_heartbeats (role, instance, seen_at) VALUES
        ('relay', 'host:101', now() - interval '2 minutes'), ('relay', 'host:102', now() - interval '5 minutes')`);
    // Three rows unpublished for ten minutes: past RELAY_STALL_SECONDS (120 s).
    await database.sql.query(`
      INSERT INTO outbox (event_id, topic, key, type, source, data, created_at)
      SELECT gen_random_uuid(), 'commands.rental-payments', 'k' || i, 't', 's', '{}', now() - interval '10 minutes'
        FROM generate_series(1, 3) i`);
    // A PMS source's command waiting 90 s for a Partner API slot: past one window (60 s).
    await database.sql.query(`
      INSERT INTO rate_budget_waiters (id, budget, lane, rank, expires_at, source, since)
      VALUES ('e2e-w1', 'partner-api', 'write', 0, now() + interval '5 minutes', 'acme', now() - interval '90 seconds')`);
    await page.reload();
    await page.waitForSelector('#attention[data-state=open]');
    const items = await page.locator('#attention-list .attention-item').evaluateAll((ns) =>
      ns.map((n) => ({
        kind: n.getAttribute('data-kind'),
        title: n.querySelector('.attention-title')?.textContent ?? '',
        count: n.querySelector('.attention-count')?.textContent ?? '',
        href: n.querySelector('.attention-title')?.getAttribute('href') ?? '',
      })),
    );
    expect(items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'not-running', count: '1', href: '#overview/consumers' }),
        expect.objectContaining({ kind: 'stalled', count: '3', href: '#overview/outbox' }),
        expect.objectContaining({
          kind: 'crash-loop',
          title: 'relay: crash-looping',
          count: '2',
          href: '#overview/relay',
        }),
        expect.objectContaining({
          title: 'Dead letters · rejected',
          count: '2',
          href: '#letters/reason=rejected',
        }),
        expect.objectContaining({
          title: 'Dead letters · exhausted',
          count: '1',
          href: '#letters/reason=exhausted',
        }),
        expect.objectContaining({ kind: 'source-wait', count: '1', href: '#overview/partner' }),
      ]),
    );
    expect(items.find((i) => i.kind === 'not-running')!.title).toContain('Command consumers');
    const n = await page.locator('#attention-list .attention-item').count();
    for (let i = 0; i < n; i++) {
      expect(
        await inFirstScreen(`#attention-list .attention-item:nth-child(${i + 1})`),
        items[i]!.title,
      ).toBe(true);
    }
    expect(await page.title()).toBe(`(${n}) rentbridge ops`);

    // The dead letters' link opens the letters of that reason.
    await page.click('#attention-list a.attention-title[href="#letters/reason=rejected"]');
    await page.waitForSelector('#letters', { state: 'visible' });
    await expect.poll(() => page.locator('#letters-table tbody tr').count()).toBe(2);
    expect(await page.inputValue('#f-reason')).toBe('rejected');

    // A stage's link brings its card into view.
    await page.goto(`${app.base}/ops/#overview`);
    await page.waitForSelector('#attention[data-state=open]');
    await page.click('#attention-list a.attention-title[href="#overview/outbox"]');
    await expect
      .poll(() =>
        page.locator('.stage[data-stage="outbox"]').evaluate((n, h) => {
          const r = n.getBoundingClientRect();
          // Scrolled to the card's top: the page scrolls by whole pixels, the card may start at a
          // fraction of one (-0.36 px seen), so within a pixel above counts as at the top.
          return r.top > -1 && r.top < h;
        }, VIEWPORT.height),
      )
      .toBe(true);
    expect(consoleErrors).toEqual([]);
  });

  /** Cells whose content overflows and is not an elided value whose whole text is its title. */
  const clippedCells = () =>
    page.locator('main table:visible td').evaluateAll((cells) =>
      cells
        .filter((td) => td.scrollWidth > td.clientWidth + 1 || td.scrollHeight > td.clientHeight + 1)
        .filter((td) => !(td.classList.contains('cut') && td.getAttribute('title') === td.textContent))
        .map((td) => `${td.closest('table')?.id ?? '?'}: ${td.textContent}`),
    );

  it('clips no table cell at 1280 px: each fits, or is elided with its whole value on hover', async () => {
    for (const [hash, ready] of [
      ['letters', '#letters-table tbody tr'],
      ['audit', '#audit-table tbody tr'],
      ['reconciliation', '#reconcile-runs'],
      ['tokens', '#tokens-table tbody tr'],
      ['overview', '#storage tr[data-table]'],
    ] as const) {
      await page.goto(`${app.base}/ops/#${hash}`);
      await page.waitForSelector(ready);
      expect(await clippedCells(), hash).toEqual([]);
    }
    // With a letter's detail open, the list keeps its width: its cells still fit.
    await page.goto(`${app.base}/ops/#letters`);
    await page.click('#letters-table tbody tr');
    await page.waitForSelector('#detail:not([hidden])');
    expect(await clippedCells()).toEqual([]);
    const time = page.locator('#letters-table tbody tr td').nth(8);
    expect(await time.textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/);
    // A topic breaks only after its dots: no line of it ends inside a name.
    const lines = await page
      .locator('#letters-table td.topic')
      .first()
      .evaluate((td) => [...td.querySelectorAll('span')].map((s) => s.getClientRects().length));
    expect(lines.every((n) => n === 1)).toBe(true);
    await page.keyboard.press('Escape');
    expect(await page.isHidden('#detail')).toBe(true);
  });
});
