import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import express from 'express';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rentalPayments } from '../../src/commands/rental-payments.js';
import { requestId } from '../../src/http/request-id.js';
import { createLogger } from '../../src/logger.js';
import { createOpsRouter, type OpsRouter } from '../../src/ops/ops-router.js';
import { createRelay, type Relay } from '../../src/relay/relay.js';
import { createHarness, uid, type Harness } from '../consumers/support/harness.js';
import { buildDecisionLetter, seedLetter } from '../dead-letters/build-dead-letter.js';
import { closeServer, launchChromium, serveApp, skipWithoutChromium } from './browser.js';
import {
  buildRentPayment,
  buildSecret,
  send,
  startReceiver,
  type TestReceiver,
} from '../receiver/webhooks.js';

const TOKEN = 'e2e-ops-token-0123456789';
const secret = buildSecret();
const betaSecret = buildSecret();

describe.skipIf(skipWithoutChromium)('console overview and trace in a real browser', () => {
  let h: Harness;
  let receiver: TestReceiver;
  let relay: Relay;
  let router: OpsRouter;
  let server: Server;
  let browser: Browser;
  let page: Page;
  let base: string;
  const flows: Array<{ paymentId: string; webhookId: string }> = [];
  /** A payment whose write met a 503 after the Partner API had applied it. */
  let lateAnswer = '';
  /** Every answer the browser got that was a 404 (a page view must cause none). */
  const notFound: string[] = [];

  beforeAll(async () => {
    h = await createHarness();
    await h.startConsumer(rentalPayments);
    receiver = await startReceiver({
      db: h.database.db,
      databaseUrl: h.database.url,
      partnerSecrets: [],
      pmsSecrets: { acme: [secret], beta: [betaSecret] },
    });
    relay = createRelay({
      db: h.database.db,
      kafka: h.kafka.kafka,
      logger: createLogger({ level: 'silent' }),
      databaseUrl: h.database.url,
      topicPrefix: h.kafka.prefix,
      retentionHours: 72,
    });
    await relay.start();

    // A little traffic: three payments through the whole flow, one webhook refused, one dead
    // letter, a poller resource that is fresh and one whose last pass failed.
    const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
    for (let i = 0; i < 3; i++) {
      const body = buildRentPayment({ payment_id: uid('pay'), enrollment_id: Number(record!.id) });
      const res = await send(receiver.url, '/webhooks/pms/acme', body, { secret });
      expect(res.status).toBe(202);
      flows.push({ paymentId: body.data.payment_id as string, webhookId: res.webhookId });
    }
    for (const f of flows) await h.outcomesOf(f.paymentId);
    const [other] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
    await h.control.addFault({
      method: 'POST',
      path: `/partner/v1/enrollments/${other!.id}/report_rental_payments`,
      kind: 'apply_then_error',
      status: 503,
    });
    const late = buildRentPayment({ payment_id: uid('pay'), enrollment_id: Number(other!.id) });
    expect((await send(receiver.url, '/webhooks/pms/acme', late, { secret })).status).toBe(202);
    lateAnswer = late.data.payment_id as string;
    await h.outcomesOf(lateAnswer);
    expect(
      (await send(receiver.url, '/webhooks/pms/acme', buildRentPayment(), { secret: buildSecret() })).status,
    ).toBe(401);
    await seedLetter(
      h.database.db,
      h.kafka.prefix,
      buildDecisionLetter(h.kafka.prefix, { reason: 'rejected' }),
    );
    await h.database.sql.query(
      `INSERT INTO poller_cursors (resource, last_started_at, last_succeeded_at, last_failed_at, last_error) VALUES
         ('applications', now(), now() - interval '40 seconds', NULL, NULL),
         ('enrollments', now(), now() - interval '31 minutes', now() - interval '1 minute', 'Partner API answered 503')`,
    );
    // A backlog 25 minutes ago: 40 rows that waited 10 to 13 minutes for the relay.
    await h.database.sql.query(
      `INSERT INTO outbox (event_id, topic, key, type, source, data, created_at, published_at)
       SELECT gen_random_uuid(), 'partner.applications', 'app-' || i, 't', '/e2e', '{}',
              now() - interval '25 minutes', now() - interval '15 minutes' + i * interval '5 seconds'
         FROM generate_series(1, 40) i`,
    );
    // Their successful passes over the hour, as the poller writes them with its cursor: the chart
    // of each resource's age of its last success (applications every 5 min, enrollments stopped).
    await h.database.sql.query(
      `INSERT INTO poller_passes (resource, succeeded_at)
       SELECT 'applications', now() - interval '40 seconds' - i * interval '5 minutes' FROM generate_series(0, 12) i
       UNION ALL
       SELECT 'enrollments', now() - interval '31 minutes' - i * interval '5 minutes' FROM generate_series(0, 6) i`,
    );

    const app = express();
    app.use(requestId());
    router = createOpsRouter({
      db: h.database.db,
      producer: h.producer,
      logger: createLogger({ level: 'silent' }),
      opsToken: TOKEN,
      topicPrefix: h.kafka.prefix,
    });
    app.use('/ops', router);
    ({ server, base } = await serveApp(app));

    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    page.on('response', (res) => {
      if (res.status() === 404) notFound.push(res.url());
    });
    await mkdir('test-artifacts', { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await closeServer(server);
    await router?.close();
    await relay?.stop();
    await receiver?.close();
    await h?.close();
  });

  const status = (stage: string) => page.getAttribute(`[data-stage="${stage}"]`, 'data-status');

  describe('when an operator signs in', () => {
    it('lands on the overview: every stage with its status, figures and last-hour charts', async () => {
      await page.goto(`${base}/ops/`);
      await page.fill('#token', TOKEN);
      await page.click('#login-submit');
      await page.waitForSelector('#pipeline .stage');
      expect(await page.locator('#tab-overview').getAttribute('class')).toContain('active');

      const stages = await page
        .locator('.stage')
        .evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-stage')));
      expect(stages).toEqual([
        'receiver',
        'outbox',
        'relay',
        'kafka',
        'consumers',
        'partner',
        'poller',
        'dead-letters',
      ]);
      expect(await status('relay')).toBe('moving');
      expect(await status('consumers')).toBe('moving');
      expect(await status('receiver')).toBe('attention'); // one webhook refused
      expect(await status('poller')).toBe('stalled');
      expect(await page.textContent('[data-stage="poller"] .stage-note')).toContain('enrollments');
      expect(await status('dead-letters')).toBe('attention');
      // Three payments, and the one whose write met a 503 after it was applied.
      expect(await page.textContent('[data-stage="consumers"]')).toMatch(/applied, last hour\s*4/);
      expect(await page.textContent('[data-stage="kafka"]')).toContain('commands.rental-payments');
      // uPlot drew real charts (canvas), not placeholders.
      await expect
        .poll(() => page.locator('[data-stage="consumers"] .chart-plot canvas').count())
        .toBeGreaterThan(0);
      expect(await page.locator('[data-stage="relay"] .chart-plot canvas').count()).toBeGreaterThan(0);
      // Outbox and poller chart the hour too: the backlog, and each resource's age of its last success.
      expect(await page.locator('[data-stage="outbox"] .chart-plot canvas').count()).toBeGreaterThan(0);
      expect(await page.locator('[data-stage="poller"] .chart-plot canvas').count()).toBeGreaterThan(0);
      expect(await page.textContent('[data-stage="outbox"] .chart-legend')).toMatch(
        /backlog now 0 · max 40\b/,
      );
      const pollerLegend = await page.textContent('[data-stage="poller"] .chart-legend');
      expect(pollerLegend).toMatch(/applications now \d+ s · max \d+ s/);
      expect(pollerLegend).toMatch(/enrollments now 18\d\d s/); // 31 min
      expect(await page.textContent('[data-testid=overview-meta]')).toMatch(/\d+ queries, [\d.]+ ms/);
      await page.screenshot({ path: 'test-artifacts/ops-overview.png', fullPage: true });
      expect(notFound, 'a page view asked for something that is not there').toEqual([]);
    });
  });

  describe('when the window is a laptop, a wide screen or a narrow one', () => {
    // 1280 and 1400: laptops (at 1400 the Partner API card used to be cut off); 1920: a wide
    // screen; 600: a narrow window, where the stages wrap into one column.
    for (const width of [1280, 1400, 1920, 600]) {
      it(`shows every stage whole at ${width} px, with no sideways scroll`, async () => {
        await page.setViewportSize({ width, height: 1000 });
        await page.reload();
        await page.waitForSelector('#pipeline .stage');
        await expect
          .poll(() => page.locator('[data-stage="consumers"] .chart-plot canvas').count())
          .toBeGreaterThan(0);
        for (const stage of ['outbox', 'poller']) {
          expect(await page.locator(`[data-stage="${stage}"] .chart-plot canvas`).count(), stage).toBe(1);
        }
        const layout = {
          ...(await page
            .locator('html')
            .evaluate((html) => ({ page: html.scrollWidth, window: html.clientWidth }))),
          stages: await page.locator('.stage').evaluateAll((nodes) =>
            nodes.map((n) => {
              const r = n.getBoundingClientRect();
              let widest = r.right;
              let what = '';
              for (const c of n.querySelectorAll('*')) {
                const right = c.getBoundingClientRect().right;
                if (right > widest) [widest, what] = [right, `${c.tagName}.${c.className}`];
              }
              return { id: `${n.getAttribute('data-stage')} ${what}`, left: r.left, right: r.right, widest };
            }),
          ),
        };
        expect(layout.page).toBeLessThanOrEqual(layout.window);
        // A card's labels wrap between words (or at a dot or hyphen), never letter by letter ("budg / et / write").
        const labels = await page.locator('.stage .figures dt').evaluateAll((nodes) =>
          nodes.map((n) => {
            // In the page: the DOM's getComputedStyle (this project's types have no DOM library).
            const style = (
              globalThis as unknown as { getComputedStyle(e: unknown): { lineHeight: string } }
            ).getComputedStyle(n);
            const lineHeight = parseFloat(style.lineHeight) || 16;
            const text = n.textContent ?? '';
            return {
              text,
              lines: Math.round(n.getBoundingClientRect().height / lineHeight),
              // Parts a line may break between: words, and the parts of a dotted or hyphenated name.
              words: text.split(/[\s./-]+/).filter(Boolean).length,
            };
          }),
        );
        expect(labels.length).toBeGreaterThan(0);
        for (const label of labels) expect(label.lines, label.text).toBeLessThanOrEqual(label.words);
        for (const stage of layout.stages) {
          expect(stage.left, stage.id).toBeGreaterThanOrEqual(0);
          expect(stage.right, stage.id).toBeLessThanOrEqual(layout.window);
          // Nothing inside a card (a chart, a long figure) sticks out of it.
          expect(stage.widest, stage.id).toBeLessThanOrEqual(stage.right + 1);
        }
        const pipelineTops = await page
          .locator('#pipeline .stage')
          .evaluateAll((nodes) => nodes.map((n) => Math.round(n.getBoundingClientRect().top)));
        // From 1280 px the six stages of the flow stand in one row; narrow, one under the other.
        if (width >= 1280) expect(new Set(pipelineTops).size).toBe(1);
        else expect(new Set(pipelineTops).size).toBe(6);
        await page.screenshot({ path: `test-artifacts/ops-overview-${width}.png`, fullPage: true });
      });
    }
    it('goes back to the default width', async () => {
      await page.setViewportSize({ width: 1600, height: 1000 });
      await page.reload();
      await page.waitForSelector('#pipeline .stage');
    });
  });

  describe('when the operator traces a Partner request id from the search box', () => {
    it('shows the whole life of the event and where the trail ends, and follows ids by click', async () => {
      const flow = flows[0]!;
      await page.fill('#trace-id', `${flow.paymentId}.a1`);
      await page.click('#trace-submit');
      await page.waitForSelector('#trace-table tbody tr');
      expect(page.url()).toContain(`#trace/${encodeURIComponent(`${flow.paymentId}.a1`)}`);
      const stages = await page
        .locator('#trace-table tbody tr')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-stage')));
      // The relay marks its row published once Kafka answered; the consumer may read its snapshot
      // before that, so those two are compared without order.
      expect(stages.filter((x) => x !== 'published')).toEqual([
        'webhook',
        'outbox',
        'snapshot',
        'command',
        'attempt',
        'outcome',
      ]);
      expect(stages).toContain('published');
      expect(await page.textContent('#trace-table')).toContain(flow.webhookId);
      expect(await page.textContent('[data-testid=trace-ends]')).toContain(
        `command acme rental_payment "${flow.paymentId}" ended applied`,
      );
      await page.screenshot({ path: 'test-artifacts/ops-trace.png', fullPage: true });

      // Each id in the timeline is a link to its own trace.
      await page.click(`#trace-table button:text-is("${flow.webhookId}")`);
      await expect.poll(() => page.textContent('#trace-title')).toBe(`Trace of ${flow.webhookId}`);
      await expect.poll(() => page.locator('#trace-table tbody tr').count()).toBe(7);

      await page.fill('#trace-id', 'no-such-id');
      await page.click('#trace-submit');
      await expect
        .poll(() => page.textContent('[data-testid=trace-ends]'))
        .toContain('no trace of "no-such-id"');
    });
  });

  describe('when the id is the own id of two commands (another PMS numbers its payments alike)', () => {
    it('lists both, and a click traces the chosen one alone', async () => {
      const shared = flows[1]!.paymentId;
      const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
      const body = buildRentPayment({ payment_id: shared, enrollment_id: Number(record!.id) });
      const res = await send(receiver.url, '/webhooks/pms/beta', body, { secret: betaSecret });
      expect(res.status).toBe(202);
      await expect
        .poll(
          async () =>
            (
              await h.database.sql.query<{ state: string }>(
                `SELECT state FROM commands WHERE source = 'beta' AND command_id = $1`,
                [shared],
              )
            ).rows[0]?.state,
          { timeout: 60_000, interval: 250 },
        )
        .toBe('applied');

      await page.fill('#trace-id', shared);
      await page.click('#trace-submit');
      const candidates = page.locator('[data-testid=trace-candidate] button');
      await expect.poll(() => candidates.count()).toBe(2);
      expect((await candidates.allTextContents()).sort()).toEqual([
        `acme rental_payment "${shared}"`,
        `beta rental_payment "${shared}"`,
      ]);
      expect(await page.isHidden('#trace-table')).toBe(true);

      await page.click(`[data-testid=trace-candidate] button[data-source="beta"]`);
      await expect
        .poll(() => page.textContent('#trace-title'))
        .toBe(`Trace of ${shared} (beta rental_payment)`);
      await expect
        .poll(() => page.textContent('[data-testid=trace-ends]'))
        .toContain(`command beta rental_payment "${shared}" ended applied`);
      const ends = await page.textContent('[data-testid=trace-ends]');
      expect(ends).not.toContain('acme');
      // Only beta's webhook: acme's payment with the same id is another command's trail.
      expect(await page.textContent('#trace-table')).toContain(res.webhookId);
      expect(await page.textContent('#trace-table')).not.toContain(flows[1]!.webhookId);
    });
  });

  describe('when the operator traces a payment whose write met a 503 after it was applied', () => {
    it('shows the snapshot, the write, the read-back with its verdict and why, and the outcome', async () => {
      await page.fill('#trace-id', lateAnswer);
      await page.click('#trace-submit');
      await expect.poll(() => page.textContent('#trace-title')).toBe(`Trace of ${lateAnswer}`);
      await expect
        .poll(() =>
          page
            .locator('#trace-table tbody tr')
            .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-stage'))),
        )
        .toEqual(expect.arrayContaining(['snapshot', 'attempt', 'wait', 'read-back', 'outcome']));
      const text = (stage: string) => page.textContent(`#trace-table tbody tr[data-stage="${stage}"]`);
      expect(await text('snapshot')).toContain(`${lateAnswer}.a0.r1`);
      expect(await text('attempt')).toMatch(/write #1 .*503/);
      expect(await text('read-back')).toContain('applied: the target state is reached');
      expect(await text('outcome')).toMatch(
        /command applied; outcome outcome\.\S+\.applied published to outcomes\.rental-payments\[\d+\]@\d+/,
      );
      await page.screenshot({ path: 'test-artifacts/ops-trace-503.png', fullPage: true });
    });
  });
});
