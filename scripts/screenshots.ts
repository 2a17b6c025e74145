/**
 * Regenerates docs/screenshots/: each page of the ops console as a newcomer sees it under the demo,
 * its first screen at 1280×800, and the overview also whole and at 1400×900.
 *
 *   npx tsx scripts/screenshots.ts
 *
 * Runs `rentbridge start` (the demo) in a schema and topic prefix of its own on the PostgreSQL and
 * Kafka of DATABASE_URL and KAFKA_BROKERS (default: the local ones), lets the demo's traffic run
 * for DEMO_SECONDS (default 75: its dead letters arrive within the first minute), takes the
 * pictures with Debian's Chromium (CHROMIUM_PATH) and drops the schema again.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Page } from 'playwright-core';
import { withSchema } from '../src/db/database-url.js';
import { launchChromium } from '../test/e2e/browser.js';
import { freePort } from '../test/support/free-port.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = `${ROOT}docs/screenshots`;
const TOKEN = 'rentbridge-demo-ops-token';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const DEMO_SECONDS = Number(process.env.DEMO_SECONDS ?? 75);

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  seconds: number,
  gone: () => string | null,
): Promise<void> {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    const why = gone();
    if (why) throw new Error(`${what}: ${why}`);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error(`${what}: not within ${seconds} s`);
}

/** The first screen; with `full`, the whole page too (the overview's cards and tables below). */
async function shoot(page: Page, name: string, full = false): Promise<void> {
  await page.screenshot({ path: `${OUT}/${name}.png` });
  if (full) await page.screenshot({ path: `${OUT}/${name}-full.png`, fullPage: true });
  console.log(`docs/screenshots/${name}.png${full ? `, ${name}-full.png` : ''}`);
}

/** Opens a tab by its address and waits until `ready` shows. */
async function open(page: Page, base: string, hash: string, ready: string): Promise<void> {
  await page.goto(`${base}/ops/#${hash}`);
  await page.waitForSelector(ready, { timeout: 30_000 });
  // The charts are drawn on the next animation frame.
  await page.waitForTimeout(500);
}

async function main(): Promise<void> {
  const schema = `screens_${randomBytes(4).toString('hex')}`;
  const [httpPort, sandboxPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${httpPort}`;
  let log = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'start', '--demo'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: withSchema(DATABASE_URL, schema),
      KAFKA_TOPIC_PREFIX: `${schema}.`,
      HTTP_PORT: String(httpPort),
      SANDBOX_PORT: String(sandboxPort),
      OPS_TOKEN: '',
      PARTNER_API_URL: '',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const browser = await launchChromium();
  try {
    await waitFor(
      'the demo ready',
      async () => (await fetch(`${base}/readyz`)).status === 200,
      180,
      () => (child.exitCode === null ? null : `the demo exited (${child.exitCode}):\n${log}`),
    );
    console.log(`demo ready at ${base}; letting it run ${DEMO_SECONDS} s`);
    await new Promise((r) => setTimeout(r, DEMO_SECONDS * 1000));
    await mkdir(OUT, { recursive: true });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${base}/ops/`);
    await page.fill('#token', TOKEN);
    await page.click('#login-submit');
    await page.waitForSelector('#band .band-stage');
    await page.waitForTimeout(1000);
    await shoot(page, 'overview-1280', true);
    await open(page, base, 'letters', '#letters-table tbody tr');
    await shoot(page, 'letters-1280');
    await page.click('#letters-table tbody tr');
    await page.waitForSelector('#detail:not([hidden])');
    await shoot(page, 'letter-detail-1280');
    const command = await page.locator('#letters-table tbody tr td').nth(7).getAttribute('title');
    if (command && command !== '–') {
      await open(page, base, `trace/${encodeURIComponent(command)}`, '#trace-table tbody tr');
      await shoot(page, 'trace-1280');
    }
    await open(page, base, 'audit', '#audit-table tbody tr');
    await shoot(page, 'audit-1280');
    await open(page, base, 'reconciliation', '#reconcile-runs');
    await shoot(page, 'reconciliation-1280');
    await open(page, base, 'tokens', '#tokens-table');
    await shoot(page, 'tokens-1280');
    await page.setViewportSize({ width: 1400, height: 900 });
    await open(page, base, 'overview', '#band .band-stage');
    await shoot(page, 'overview-1400', true);
  } catch (error) {
    console.error(log.slice(-4000));
    throw error;
  } finally {
    await browser.close();
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}

await main();
