import type { Server } from 'node:http';
import express from 'express';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestId } from '../../src/http/request-id.js';
import { createSharedProducer, type SharedProducer } from '../../src/kafka/shared-producer.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createLogger } from '../../src/logger.js';
import { createOpsRouter, type OpsRouter } from '../../src/ops/ops-router.js';
import type { Sandbox } from '../../src/dev/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { appliedCommand, reconcilerWith } from '../support/reconcile-seed.js';
import { startSandboxPartner } from '../support/sandbox.js';
import { closeServer, launchChromium, serveApp, skipWithoutChromium } from './browser.js';

const TOKEN = 'e2e-ops-token-0123456789';
const logger = createLogger({ level: 'silent' });
const PAID = (day: number) => ({ amount_cents: 90_000 + day, paid_on: `2026-11-0${day}`, period: '2026-11' });

/**
 * The console's Reconciliation page (issue 45) in a real browser, on runs a real pass made against
 * the sandbox: acme's payment is on its enrollment (confirmed), its second is not (missing), a
 * third payment there no command explains (unexpected), and beta's registration has no customer
 * (missing). The page lists the runs, shows the newest one's drift by command type and source,
 * and each item's command opens that command's trace.
 */
describe.skipIf(skipWithoutChromium)('the console reconciliation page in a real browser', () => {
  let database: TestDatabase;
  let kafka: TestKafka;
  let producer: SharedProducer;
  let sandbox: Sandbox;
  let router: OpsRouter;
  let server: Server;
  let base: string;
  let browser: Browser;
  let page: Page;
  const runIds: number[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    kafka = createTestKafka();
    await kafka.createTopics([TOPICS.reconciliationReports]);
    producer = createSharedProducer(kafka.kafka);
    const started = await startSandboxPartner();
    sandbox = started.sandbox;
    const [enrollment] = await started.control.addRecords('enrollments', [
      { status: 'active', rental_payments: [PAID(1), PAID(3)] },
    ]);
    const e = String(enrollment!.id);
    await database.db.command.createMany({
      data: [
        appliedCommand('acme', 'rental_payment', 'pay-acme-1', e, {
          payment_id: 'pay-acme-1',
          enrollment_id: e,
          ...PAID(1),
        }),
        appliedCommand('acme', 'rental_payment', 'pay-acme-2', e, {
          payment_id: 'pay-acme-2',
          enrollment_id: e,
          ...PAID(2),
        }),
        appliedCommand('beta', 'customer_registration', 'reg-beta-1', 'gone@example.com', {
          registration_id: 'reg-beta-1',
          email: 'gone@example.com',
          first_name: 'Ada',
          last_name: 'Lovelace',
          phone: '5551234567',
        }),
      ],
    });
    const reconciler = reconcilerWith({
      db: database.db,
      partner: started.partner,
      producer,
      logger,
      topicPrefix: kafka.prefix,
    });
    const now = Date.now();
    for (const source of ['acme', undefined]) {
      const { run } = await reconciler.run(
        { since: new Date(now - 3_600_000), until: new Date(now + 60_000), source },
        'cli',
      );
      runIds.push(run.id);
    }
    const app = express();
    app.use(requestId());
    router = createOpsRouter({ db: database.db, logger, opsToken: TOKEN, topicPrefix: kafka.prefix });
    app.use('/ops', router);
    ({ server, base } = await serveApp(app));
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 1200 } });
    await page.goto(`${base}/ops`);
    await page.fill('#token', TOKEN);
    await page.click('#login-submit');
  });

  afterAll(async () => {
    await browser?.close();
    await closeServer(server);
    await router?.close();
    await sandbox?.close();
    await producer?.close();
    await kafka?.close();
    await database?.drop();
  });

  it('lists the runs, newest first, with their scope and counts', async () => {
    await page.click('#tab-reconciliation');
    const rows = page.locator('#reconcile-runs tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    const cells = async (n: number) =>
      (await rows.nth(n).locator('td').allTextContents()).map((t) => t.trim());
    const [all, acme] = [await cells(0), await cells(1)];
    expect(all[0]).toBe(`#${runIds[1]}`);
    expect(all[4]).toBe('all');
    expect(all[5]).toBe('confirmed 1 · missing 2 · unexpected 1');
    expect(acme[0]).toBe(`#${runIds[0]}`);
    expect(acme[4]).toBe('acme');
    expect(acme[5]).toBe('confirmed 1 · missing 1 · unexpected 1');
  });

  it('shows the newest run’s drift by command type and source, drift first', async () => {
    await expect
      .poll(() => page.textContent('#reconcile-run-title'))
      .toBe(`Run #${runIds[1]}: confirmed 1 · missing 2 · unexpected 1`);
    expect((await page.locator('#reconcile-drift li').allTextContents()).sort()).toEqual([
      'customer_registration · beta · missing: 1',
      'rental_payment · acme · missing: 1',
      'rental_payment · no source · unexpected: 1',
    ]);
    const verdicts = await page.locator('#reconcile-items tbody tr td:first-child').allTextContents();
    expect(verdicts.at(-1)).toBe('confirmed');
    expect(verdicts.slice(0, 3).sort()).toEqual(['missing', 'missing', 'unexpected']);
  });

  it('opens an older run from the list', async () => {
    await page.click(`#reconcile-runs button:text-is("#${runIds[0]}")`);
    await expect
      .poll(() => page.textContent('#reconcile-run-title'))
      .toBe(`Run #${runIds[0]}: confirmed 1 · missing 1 · unexpected 1`);
    expect(await page.locator('#reconcile-drift li').allTextContents()).not.toContain(
      'customer_registration · beta · missing: 1',
    );
  });

  it('links an item’s command to its trace', async () => {
    const missing = page.locator('#reconcile-items tr.verdict-missing');
    expect(await missing.locator('td').nth(5).textContent()).toContain('no such payment');
    await missing.locator('button:text-is("pay-acme-2")').click();
    await expect.poll(() => page.url()).toContain('#trace/pay-acme-2');
    await expect.poll(() => page.textContent('#trace-title')).toBe('Trace of pay-acme-2');
    await expect
      .poll(() => page.textContent('[data-testid=trace-ends]'))
      .toContain('command acme rental_payment "pay-acme-2" ended applied');
    // The unexpected payment has no command to trace.
    await page.goBack();
    await page.locator('#reconcile-items tr.verdict-unexpected').waitFor();
    expect(await page.locator('#reconcile-items tr.verdict-unexpected td').nth(3).textContent()).toBe(
      'no command',
    );
  });
});
