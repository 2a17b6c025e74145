import { mkdir } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import type { Overview } from '../../src/ops/overview/overview.js';
import type { Trace } from '../../src/event-trace/trace.js';
import { uid, type Harness } from '../consumers/support/harness.js';
import { buildDecisionLetter, seedLetter } from '../dead-letters/build-dead-letter.js';
import { buildRentPayment, buildSecret, send, type TestReceiver } from '../receiver/webhooks.js';
import { useApp, type AppOptions } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { skipWithoutChromium } from './browser.js';

/**
 * The ops overview and trace, through its API and the CLI and then in a real browser, each over
 * its own whole flow: signed webhooks through the receiver, the relay and the rental-payments
 * consumer to the sandbox and their outcomes.
 */
const TOKEN = 'e2e-ops-token-0123456789';
const secret = buildSecret();
const betaSecret = buildSecret();

/** The overview's stages, in the order of the flow. */
const STAGES = ['receiver', 'outbox', 'relay', 'kafka', 'consumers', 'partner', 'poller', 'dead-letters'];

/** The trail of an applied payment, from its webhook to its outcome. */
function expectAppliedTrail(stages: Array<string | null>): void {
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
}

/**
 * Waits for the two notes written just after a command's messages are sent, and so possibly after
 * a reader has its outcome: the relay's mark on the command's outbox row, and where the outcome
 * landed on Kafka. A trace read before them would lack its `published` step or the outcome's place.
 */
async function settled(h: Harness, commandId: string): Promise<void> {
  // vi.waitFor, not expect.poll: it is called from beforeAll hooks too.
  await vi.waitFor(
    async () => {
      const { rows } = await h.database.sql.query<{ outbox: boolean; outcome: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM outbox WHERE subject = $1 AND published_at IS NOT NULL) AS outbox,
                EXISTS (SELECT 1 FROM command_attempts WHERE command_id = $1 AND kind = 'outcome') AS outcome`,
        [commandId],
      );
      expect(rows[0]).toEqual({ outbox: true, outcome: true });
    },
    { timeout: 10_000, interval: 50 },
  );
}

/** A payment to a new enrollment whose report the Partner API applies but answers with a 503. */
async function paymentAppliedThen503(h: Harness) {
  const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
  await h.control.addFault({
    method: 'POST',
    path: `/partner/v1/enrollments/${record!.id}/report_rental_payments`,
    kind: 'apply_then_error',
    status: 503,
  });
  return buildRentPayment({ payment_id: uid('pay'), enrollment_id: Number(record!.id) });
}

function useFlow(options: Pick<AppOptions, 'ops' | 'browser'> & { pmsSecrets: Record<string, string[]> }) {
  return useApp({
    harness: true,
    consumers: [rentalPayments],
    receiver: { partnerSecrets: [], pmsSecrets: options.pmsSecrets },
    relay: {},
    ops: options.ops,
    browser: options.browser,
  });
}

describe('ops overview and trace', () => {
  const app = useFlow({
    pmsSecrets: { acme: [secret] },
    // Not the defaults (72 h, 120 s): the console must say and judge by what is configured.
    ops: { opsToken: TOKEN, insight: { retentionHours: 48, relayStallSeconds: 20 } },
  });
  let h: Harness;
  let receiver: TestReceiver;
  let base: string;

  beforeAll(() => {
    ({ harness: h, receiver } = app);
    base = `${app.base}/ops/api`;
  });

  async function get<T>(path: string, token = TOKEN): Promise<{ status: number; body: T }> {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as T };
  }

  /** A signed PMS webhook for a real sandbox enrollment, followed until its outcome. */
  async function paymentThroughTheFlow(enrollmentStatus = 'active') {
    const [record] = await h.control.addRecords('enrollments', [
      { status: enrollmentStatus, rental_payments: [] },
    ]);
    const body = buildRentPayment({ payment_id: uid('pay'), enrollment_id: Number(record!.id) });
    const res = await send(receiver.url, '/webhooks/pms/acme', body, { secret });
    expect(res.status).toBe(202);
    const [outcome] = await h.outcomesOf(body.data.payment_id as string);
    await settled(h, body.data.payment_id as string);
    return {
      paymentId: body.data.payment_id as string,
      webhookId: res.webhookId,
      eventId: String(res.json.event_id),
      outcome,
    };
  }

  describe('when a signed webhook becomes an applied command', () => {
    let flow: Awaited<ReturnType<typeof paymentThroughTheFlow>>;
    beforeAll(async () => {
      flow = await paymentThroughTheFlow();
    });

    it('traces it from the webhook id through outbox, Kafka, the guard and the outcome', async () => {
      const { status, body } = await get<Trace>(`/trace/${flow.webhookId}`);
      expect(status).toBe(200);
      expect(body.found).toBe(true);
      const stages = body.steps.map((s) => s.stage);
      expectAppliedTrail(stages);
      expect(body.steps[0]!.details).toMatchObject({ source: 'pms:acme', webhookId: flow.webhookId });
      const step = (stage: string) => body.steps.find((x) => x.stage === stage)!;
      expect(step('published').what).toMatch(/commands\.rental-payments partition \d+ offset \d+/);
      expect(step('snapshot').details).toMatchObject({
        requestId: `${flow.paymentId}.a0.r1`,
        kind: 'snapshot',
      });
      expect(step('snapshot').what).toMatch(/status active, updated_at /);
      expect(step('attempt').details).toMatchObject({
        requestId: `${flow.paymentId}.a1`,
        status: expect.any(Number),
      });
      expect(step('outcome').what).toMatch(
        /applied; outcome outcome\.\S+\.applied published to outcomes\.rental-payments\[\d+\]@\d+/,
      );
      expect(body.ends.join('\n')).toContain(`command acme rental_payment "${flow.paymentId}" ended applied`);
    });

    it('finds the same trail from the CloudEvent id, the command id and the Partner request id', async () => {
      const fromWebhook = (await get<Trace>(`/trace/${flow.webhookId}`)).body.steps;
      for (const id of [flow.eventId, flow.paymentId, `${flow.paymentId}.a1`]) {
        const { body } = await get<Trace>(`/trace/${encodeURIComponent(id)}`);
        expect(body.steps, id).toEqual(fromWebhook);
      }
    });

    it('counts it in the overview: stored, published, applied; nothing stalled', async () => {
      const { status, body } = await get<Overview>('/overview');
      expect(status).toBe(200);
      const stage = (id: string) => body.stages.find((s) => s.id === id)!;
      expect(body.stages.map((s) => s.id)).toEqual(STAGES);
      expect(stage('receiver').figures[0]).toEqual({ label: 'stored, last hour', value: 1 });
      expect(stage('relay').status).toBe('moving');
      expect(stage('kafka').figures).toContainEqual({ label: 'commands.rental-payments', value: 1 });
      expect(stage('consumers').figures).toContainEqual({ label: 'applied, last hour', value: 1 });
      const applied = stage('consumers').charts[0]!.series.find((s) => s.name === 'applied')!;
      expect(applied.values.reduce<number>((a, b) => a + (b ?? 0), 0)).toBe(1);
      expect(applied.values).toHaveLength(body.minutes.length);
      expect(body.cost.queries).toBeGreaterThan(0);
    });
  });

  describe('when a write met a 503 after it was applied', () => {
    it('shows every guard step: snapshot, write, wait, read-back with its verdict and why, outcome', async () => {
      const body = await paymentAppliedThen503(h);
      const paymentId = body.data.payment_id as string;
      expect((await send(receiver.url, '/webhooks/pms/acme', body, { secret })).status).toBe(202);
      const [outcome] = await h.outcomesOf(paymentId);
      expect(outcome).toMatchObject({ status: 'applied' });

      await settled(h, paymentId);
      const { body: trace } = await get<Trace>(`/trace/${encodeURIComponent(paymentId)}`);
      const guard = trace.steps.filter((x) =>
        ['snapshot', 'attempt', 'wait', 'read-back', 'outcome'].includes(x.stage),
      );
      expect(guard.map((x) => x.stage)).toEqual(['snapshot', 'attempt', 'wait', 'read-back', 'outcome']);
      const [snapshot, write, wait, readBack, done] = guard;
      expect(snapshot!.details).toMatchObject({ requestId: `${paymentId}.a0.r1`, result: 'read' });
      expect(write!.details).toMatchObject({ requestId: `${paymentId}.a1`, status: 503 });
      expect(write!.what).toContain('503');
      expect(wait!.what).toMatch(/waited \d+ ms: before an early read-back/);
      expect(readBack!.details).toMatchObject({ requestId: `${paymentId}.a1.r1`, result: 'applied' });
      expect(readBack!.what).toContain('applied: the target state is reached');
      expect(done!.what).toMatch(
        /command applied; outcome outcome\.\S+\.applied published to outcomes\.rental-payments\[\d+\]@\d+/,
      );
      for (const step of guard) expect(step.details.ms ?? 0).toBeGreaterThanOrEqual(0);

      // The published step names where the command is on Kafka: the message is there.
      const published = trace.steps.find((x) => x.stage === 'published')!;
      const onKafka = await h.kafka.readMessages('commands.rental-payments', 200, 5_000);
      const message = onKafka.find((m) => m.headers?.ce_id?.toString() === published.details.eventId);
      expect(message?.offset).toBe(published.details.offset);
    });
  });

  describe('when an id is both a dead-letter id and a Partner record id', () => {
    it('says which kinds it matched, and follows only the one picked', async () => {
      const letter = await seedLetter(
        h.database.db,
        h.kafka.prefix,
        buildDecisionLetter(h.kafka.prefix, { reason: 'rejected' }),
      );
      const id = String(letter);
      await h.database.sql.query(
        `INSERT INTO published_versions (resource, record_id, updated_at, via) VALUES ('customers', $1, '2026-11-01T00:00:00Z', 'poller')`,
        [id],
      );
      const all = (await get<Trace>(`/trace/${id}`)).body;
      expect(all.matchedAs).toEqual(['record', 'dead-letter']);
      // The record's own trail (the sandbox's record ids are small numbers too) and the letter's.
      expect(all.steps.map((s) => s.stage)).toEqual(expect.arrayContaining(['dead-letter', 'version']));
      expect(all.ends[0]).toContain('matched more than one kind of id (record id, dead-letter id)');

      const letterOnly = (await get<Trace>(`/trace/${id}?as=dead-letter`)).body;
      expect(letterOnly.as).toBe('dead-letter');
      expect(letterOnly.steps.map((s) => s.stage)).toEqual(['dead-letter']);
      const recordOnly = (await get<Trace>(`/trace/${id}?as=record`)).body;
      expect(recordOnly.steps.map((s) => s.stage)).toContain('version');
      expect(recordOnly.steps.map((s) => s.stage)).not.toContain('dead-letter');
      expect((await get(`/trace/${id}?as=nonsense`)).status).toBe(400);
    });
  });

  describe('when the outbox row was pruned', () => {
    it('says the trail ends there, and why', async () => {
      const flow = await paymentThroughTheFlow();
      await h.database.sql.query(`DELETE FROM outbox WHERE event_id = $1::uuid`, [flow.eventId]);
      const { body } = await get<Trace>(`/trace/${flow.webhookId}`);
      expect(body.steps[0]!.stage).toBe('webhook');
      expect(body.ends.join('\n')).toMatch(/outbox row \d+ is gone: .*OUTBOX_RETENTION_HOURS \(48 h\)/);
    });
  });

  describe('when an outbox row waits longer than RELAY_STALL_SECONDS', () => {
    it('marks the outbox and the relay as not moving by that bound, as /readyz does', async () => {
      await app.relay.stop();
      try {
        await h.database.sql.query(
          `INSERT INTO outbox (event_id, topic, key, type, source, data, created_at)
           VALUES (gen_random_uuid(), $1, 'k', 't', '/test', '{}', now() - interval '30 seconds')`,
          [`${h.kafka.prefix}partner.applications`],
        );
        const { body } = await get<Overview>('/overview');
        const relayStage = body.stages.find((s) => s.id === 'relay')!;
        expect(relayStage.status).toBe('stalled');
        expect(relayStage.note).toMatch(/oldest unpublished row waits 3\d s \(> 20 s, RELAY_STALL_SECONDS\)/);
        expect(body.rules.relayStallSeconds).toBe(20);
        expect(body.stages.find((s) => s.id === 'outbox')!.figures[0]).toEqual({
          label: 'backlog (unpublished rows)',
          value: 1,
        });
      } finally {
        await h.database.sql.query(`DELETE FROM outbox WHERE published_at IS NULL`);
        await app.restartRelay();
      }
    });
  });

  describe('when some roles report in and others do not', () => {
    it('says "not running" for the missing ones, never "idle"', async () => {
      await h.database.sql.query(
        `INSERT INTO role_heartbeats (role, instance, seen_at) VALUES
           ('http', 'a:1', now()), ('relay', 'b:2', now()),
           ('consumer:rental-payments', 'c:3', now()), ('consumer:application-decisions', 'c:3', now()),
           ('poller', 'd:4', now() - interval '5 minutes')`,
      );
      try {
        const { body } = await get<Overview>('/overview');
        const stage = (id: string) => body.stages.find((s) => s.id === id)!;
        // The poller's last report is 5 minutes old; no dead-letter indexer ever reported.
        expect(stage('poller').status).toBe('stopped');
        expect(stage('poller').note).toContain('not running: no poller process has reported for over 30 s');
        expect(stage('dead-letters').status).toBe('stopped');
        expect(stage('relay').status).not.toBe('stopped');
        expect(stage('consumers').status).toBe('attention');
        expect(stage('consumers').note).toContain('not running: customer-registrations, enrollments');
        expect(body.rules.roleGoneSeconds).toBe(30);
      } finally {
        await h.database.sql.query(`DELETE FROM role_heartbeats`);
      }
    });
  });

  describe('when the id is unknown or the token is wrong', () => {
    it('answers found: false with a plain sentence, and 401 with a wrong token', async () => {
      const { body } = await get<Trace>('/trace/nothing-like-this');
      expect(body).toMatchObject({ found: false, steps: [] });
      expect(body.ends[0]).toContain('no trace of "nothing-like-this" in PostgreSQL');
      expect((await get('/overview', 'a-wrong-token-of-some-length')).status).toBe(401);
    });
  });

  describe('rentbridge trace', () => {
    it('prints the timeline as a table, or JSON with --json, and exits 1 for an unknown id', async () => {
      const flow = await paymentThroughTheFlow();
      const env = { DATABASE_URL: h.database.url, KAFKA_TOPIC_PREFIX: h.kafka.prefix, LOG_LEVEL: 'silent' };
      const table = await runCli(['trace', `${flow.paymentId}.a1`], env);
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/time \(UTC\)\s+stage\s+what/);
      expect(table.stdout).toMatch(/published\s+published to Kafka commands\.rental-payments/);
      expect(table.stdout).toContain('where the trail ends:');
      const json = await runCli(['trace', flow.webhookId, '--json'], env);
      expect((JSON.parse(json.stdout) as Trace).steps.map((s) => s.stage)).toContain('outcome');
      const picked = await runCli(['trace', flow.paymentId, '--as', 'command', '--json'], env);
      expect((JSON.parse(picked.stdout) as Trace).as).toBe('command');
      const badKind = await runCli(['trace', flow.paymentId, '--as', 'nonsense'], env);
      expect(badKind.code).toBe(2);
      const unknown = await runCli(['trace', 'nothing-like-this'], env);
      expect(unknown.code).toBe(1);
      expect(unknown.stdout).toContain('no trace of "nothing-like-this"');
    });
  });
});

describe.skipIf(skipWithoutChromium)('console overview and trace in a real browser', () => {
  const app = useFlow({
    pmsSecrets: { acme: [secret], beta: [betaSecret] },
    ops: { opsToken: TOKEN, app: 'express' },
    browser: true,
  });
  let h: Harness;
  let receiver: TestReceiver;
  let page: Page;
  let base: string;
  const flows: Array<{ paymentId: string; webhookId: string }> = [];
  /** A payment whose write met a 503 after the Partner API had applied it. */
  let lateAnswer = '';
  /** Every answer the browser got that was a 404 (a page view must cause none). */
  const notFound: string[] = [];

  beforeAll(async () => {
    ({ harness: h, receiver, base } = app);

    // A little traffic: three payments through the whole flow, one webhook refused, one dead
    // letter, a poller resource that is fresh and one whose last pass failed.
    const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
    for (let i = 0; i < 3; i++) {
      const body = buildRentPayment({ payment_id: uid('pay'), enrollment_id: Number(record!.id) });
      const res = await send(receiver.url, '/webhooks/pms/acme', body, { secret });
      expect(res.status).toBe(202);
      flows.push({ paymentId: body.data.payment_id as string, webhookId: res.webhookId });
    }
    for (const f of flows) {
      await h.outcomesOf(f.paymentId);
      await settled(h, f.paymentId);
    }
    const late = await paymentAppliedThen503(h);
    expect((await send(receiver.url, '/webhooks/pms/acme', late, { secret })).status).toBe(202);
    lateAnswer = late.data.payment_id as string;
    await h.outcomesOf(lateAnswer);
    await settled(h, lateAnswer);
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
    // A long pass of customers under way: its last success is 40 minutes old, its pages arrive.
    await h.database.sql.query(
      `INSERT INTO poller_cursors (resource, last_started_at, last_succeeded_at, pass_pages, pass_page_count, last_page_at)
       VALUES ('customers', now() - interval '20 minutes', now() - interval '40 minutes', 212, 807, now() - interval '3 seconds')`,
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

    page = await app.browser.newPage({ viewport: { width: 1600, height: 1000 } });
    page.on('response', (res) => {
      if (res.status() === 404) notFound.push(res.url());
    });
    await mkdir('test-artifacts', { recursive: true });
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
      expect(stages).toEqual(STAGES);
      expect(await status('relay')).toBe('moving');
      expect(await status('consumers')).toBe('moving');
      expect(await status('receiver')).toBe('attention'); // one webhook refused
      expect(await status('poller')).toBe('stalled');
      expect(await page.textContent('[data-stage="poller"] .stage-note')).toBe(
        'stale or failing: enrollments',
      );
      expect(await page.textContent('[data-stage="poller"] .figures')).toMatch(
        /pass under way: page 212 of 807, \d+ s ago/,
      );
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
    // screen; 600: a narrow window, where the cards stand in one column and the band in two rows.
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
        await page.screenshot({ path: `test-artifacts/ops-overview-${width}.png`, fullPage: true });
        // A count keeps its digits on one line inside its card ("3793" was "379 / 3" beside a long
        // topic name at 1400 px): every count set to eight digits, the most a card shows in a year.
        const counts = await page.locator('.stage .figures dd.count').evaluateAll((nodes) =>
          nodes.map((n) => {
            n.textContent = '12345678';
            // The lines of the text itself (a grid cell is as tall as its row's label).
            const range = (
              globalThis as unknown as {
                document: {
                  createRange(): { selectNodeContents(n: unknown): void; getClientRects(): unknown[] };
                };
              }
            ).document.createRange();
            range.selectNodeContents(n);
            return {
              label: n.previousElementSibling?.textContent ?? '',
              lines: range.getClientRects().length,
              inside:
                n.getBoundingClientRect().right <= n.closest('.stage')!.getBoundingClientRect().right + 1,
            };
          }),
        );
        expect(counts.length).toBeGreaterThan(10);
        for (const c of counts)
          expect({ label: c.label, lines: c.lines, inside: c.inside }).toEqual({
            ...c,
            lines: 1,
            inside: true,
          });
        for (const stage of layout.stages) {
          expect(stage.left, stage.id).toBeGreaterThanOrEqual(0);
          expect(stage.right, stage.id).toBeLessThanOrEqual(layout.window);
          // Nothing inside a card (a chart, a long figure) sticks out of it.
          expect(stage.widest, stage.id).toBeLessThanOrEqual(stage.right + 1);
        }
        const bandTops = await page
          .locator('#band .band-stage')
          .evaluateAll((nodes) => nodes.map((n) => Math.round(n.getBoundingClientRect().top)));
        // The flow stands in one band (decision 057): one row of eight from 1280 px; narrow, two
        // rows of four. The stage cards below fill as many columns as fit.
        expect(bandTops).toHaveLength(8);
        if (width >= 1280) expect(new Set(bandTops).size).toBe(1);
        else expect(new Set(bandTops).size).toBe(2);
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
      expectAppliedTrail(stages);
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
