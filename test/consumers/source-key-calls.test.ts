import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompositionRoot, type CompositionRoot } from '../../src/app/composition-root.js';
import { loadConfig } from '../../src/config/config.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createLogger } from '../../src/logger.js';
import { ownKeyId } from '../../src/partner/source-partners.js';
import { buildSecret } from '../receiver/webhooks.js';
import { createHarness, FAST_GUARD, headersOf, uid, type Harness } from './support/harness.js';

/**
 * Issue 34, which key every Partner API call made for a source carries. The consumers and the
 * poller are built by the composition root, as `rentbridge consumer` / `poller` build them; every
 * request to the sandbox is seen on its way out (the bearer token's subject is the access key it
 * was issued for), so the test sees the key of each snapshot, write and read-back.
 */
const DEPLOYMENT = { access_key: 'sandbox-access-key', secret_key: 'sandbox-secret-key' };
const BETA = { access_key: 'beta-calls-access', secret_key: 'beta-calls-secret-0123456789' };
const BETA_OWNER = 'owner-beta';

interface Call {
  method: string;
  path: string;
  requestId: string;
  /** The access key the request was made with (its bearer token's subject, or the body's key). */
  key: string;
}

function keyOf(headers: Headers, body: unknown, path: string): string {
  if (path.endsWith('/authenticate')) {
    return String((JSON.parse(String(body)) as { access_key?: unknown }).access_key);
  }
  const token = /^Bearer (\S+)$/.exec(headers.get('authorization') ?? '')?.[1] ?? '';
  const payload = token.split('.')[1];
  return payload
    ? String((JSON.parse(Buffer.from(payload, 'base64url').toString()) as { sub?: unknown }).sub)
    : '';
}

describe('the key of every Partner API call made for a PMS source', () => {
  let h: Harness;
  let root: CompositionRoot;
  let consumers: Array<ReturnType<CompositionRoot['commandConsumer']>> = [];
  const calls: Call[] = [];
  const logLines: string[] = [];
  const tokens = new Set<string>();
  const original = globalThis.fetch;
  const webhookSecrets = { acme: [buildSecret()], beta: [buildSecret()] };

  beforeAll(async () => {
    h = await createHarness();
    await h.control.createKey({ ...BETA, owner_ids: [BETA_OWNER] });
    // Every request of this process to the Partner API, with the key it carries.
    globalThis.fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const res = await original(input, init);
      if (url.pathname.startsWith('/partner/v1/')) {
        const headers = new Headers(init?.headers);
        calls.push({
          method: init?.method ?? 'GET',
          path: url.pathname,
          requestId: headers.get('x-request-id') ?? '',
          key: keyOf(headers, init?.body, url.pathname),
        });
        const auth = headers.get('authorization');
        if (auth) tokens.add(auth.replace(/^Bearer /, ''));
      }
      return res;
    };
    // Everything the process logs, at its most verbose, to look for secrets in it.
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    const config = loadConfig({
      DATABASE_URL: h.database.url,
      KAFKA_BROKERS: h.kafka.brokers.join(','),
      KAFKA_TOPIC_PREFIX: h.kafka.prefix,
      PARTNER_TIMEOUT_MS: '1500',
      PMS_WEBHOOK_SECRETS: JSON.stringify(webhookSecrets),
      PMS_PARTNER_KEYS: JSON.stringify({ beta: { ...BETA, scoped: true } }),
      // acme keeps the deployment key beside beta's own (the sources trust each other).
      PMS_SHARED_PARTNER_KEY: 'trusted',
      LOG_LEVEL: 'trace',
      HTTP_PORT: '0',
    });
    root = createCompositionRoot(config, createLogger({ level: 'trace' }, sink));
    root.usePartnerUrl(h.sandbox.url);
    consumers = [
      root.commandConsumer('application-decisions', { guard: FAST_GUARD }),
      root.commandConsumer('rental-payments', { guard: FAST_GUARD }),
    ];
    for (const c of consumers) await c.start();
  });
  afterAll(async () => {
    globalThis.fetch = original;
    for (const c of consumers) await c.stop();
    await root?.close();
    await h?.close();
  });

  const callsOf = (commandId: string) => calls.filter((c) => c.requestId.startsWith(`${commandId}.`));
  const slotsSince = async (id: bigint) =>
    (
      await h.database.sql.query<{ budget: string; n: string }>(
        'SELECT budget, count(*) AS n FROM rate_budget_slots WHERE id > $1 GROUP BY budget',
        [String(id)],
      )
    ).rows.map((r) => ({ budget: r.budget, n: Number(r.n) }));
  const lastSlot = async () =>
    BigInt(
      (await h.database.sql.query<{ id: string | null }>('SELECT max(id) AS id FROM rate_budget_slots'))
        .rows[0]?.id ?? 0,
    );

  async function publish(source: string, topic: string, key: string, type: string, data: object) {
    const id = String(
      (data as { decision_id?: string; payment_id?: string }).decision_id ??
        (data as { payment_id?: string }).payment_id,
    );
    const event = toCloudEvent({
      id: `evt-${id}`,
      source: `/webhooks/pms/${source}`,
      type,
      subject: id,
      data,
    });
    await h.publish(topic, key, JSON.stringify(event));
    return id;
  }
  const decide = (source: string, applicationId: number) =>
    publish(source, TOPICS.applicationDecisions, String(applicationId), COMMAND_TYPES.applicationDecision, {
      decision_id: uid(`dec-${source}`),
      application_id: String(applicationId),
      decision: 'approve',
    });
  const pay = (source: string, enrollmentId: number) =>
    publish(source, TOPICS.rentalPayments, String(enrollmentId), COMMAND_TYPES.rentalPayment, {
      payment_id: uid(`pay-${source}`),
      enrollment_id: String(enrollmentId),
      amount_cents: 125_000,
      paid_on: '2026-11-01',
    });
  async function application(owner: string): Promise<number> {
    const [r] = await h.control.addRecords('applications', [{ status: 'submitted', owner_id: owner }]);
    return Number(r!.id);
  }

  describe('when a scoped source decides an application whose write answers ambiguously', () => {
    it('takes the snapshot, writes and reads back with its own key, on the one budget', async () => {
      const id = await application(BETA_OWNER);
      // Applied, then a 500: the guard must read back to know, and must do it with beta's key.
      await h.control.addFault({
        method: 'POST',
        path: `/partner/v1/applications/${id}/approve`,
        kind: 'apply_then_error',
        status: 500,
        times: 1,
      });
      const before = await lastSlot();
      const decisionId = await decide('beta', id);
      const [outcome] = await h.outcomesOf(decisionId);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 1 });

      const mine = callsOf(decisionId);
      const write = mine.findIndex((c) => c.method === 'POST');
      expect(write).toBeGreaterThan(0); // a snapshot read came first
      expect(mine.slice(write + 1).some((c) => c.method === 'GET')).toBe(true); // and a read-back after
      expect(new Set(mine.map((c) => c.key))).toEqual(new Set([BETA.access_key]));
      // The stored snapshot names the key that read it (a digest): a read-back with another key
      // (PMS_PARTNER_KEYS changed in between) would not be compared with it.
      const { rows } = await h.database.sql.query<{ snapshot: Record<string, unknown> }>(
        `SELECT snapshot FROM commands WHERE source = 'beta' AND command_id = $1`,
        [decisionId],
      );
      expect(rows[0]!.snapshot.partner_key).toBe(ownKeyId(BETA.access_key));
      // beta's requests took slots of the deployment's one budget, as every other key's do.
      const slots = await slotsSince(before);
      expect(slots.map((s) => s.budget)).toEqual(['partner-api']);
      expect(slots[0]!.n).toBeGreaterThanOrEqual(mine.length);
    });
  });

  describe('when a scoped source reports a payment for an enrollment outside its scope', () => {
    it('is rejected with the platform error whole: one write, no retry, no read-back', async () => {
      const [enrollment] = await h.control.addRecords('enrollments', [
        { status: 'active', rental_payments: [], owner_id: 'owner-acme' },
      ]);
      const path = `/partner/v1/enrollments/${enrollment!.id}/report_rental_payments`;
      const paymentId = await pay('beta', Number(enrollment!.id));
      const [outcome] = await h.outcomesOf(paymentId);
      expect(outcome).toMatchObject({
        status: 'rejected',
        attempts: 1,
        error: { status: 404, code: 'not_found', message: expect.any(String), request_id: `${paymentId}.a1` },
      });
      const [letter] = await h.deadLettersOf(paymentId);
      const headers = headersOf(letter!.message.headers);
      expect(headers['dlq-reason']).toBe('rejected');
      expect(headers['dlq-error-message']).toMatch(/outside the scope of source "beta"/);
      await new Promise((r) => setTimeout(r, 500));
      const writes = await h.writesTo(path);
      expect(writes).toEqual([expect.objectContaining({ applied: false, status: 404 })]);
      // Nothing read after the refusal: no read-back of a final answer.
      const mine = callsOf(paymentId);
      const write = mine.findIndex((c) => c.method === 'POST');
      expect(mine.slice(write + 1)).toEqual([]);
      expect(new Set(mine.map((c) => c.key))).toEqual(new Set([BETA.access_key]));
    });
  });

  describe('when a source without a key of its own pays, and after many commands of beta', () => {
    it('uses the deployment key for acme; beta authenticated once and reused its token', async () => {
      const [enrollment] = await h.control.addRecords('enrollments', [
        { status: 'active', rental_payments: [], owner_id: 'owner-acme' },
      ]);
      const paymentId = await pay('acme', Number(enrollment!.id));
      const [outcome] = await h.outcomesOf(paymentId);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 1 });
      expect(new Set(callsOf(paymentId).map((c) => c.key))).toEqual(new Set([DEPLOYMENT.access_key]));

      for (let i = 0; i < 3; i++) {
        const [o] = await h.outcomesOf(await decide('beta', await application(BETA_OWNER)));
        expect(o!.status).toBe('applied');
      }
      const authentications = (key: string) =>
        calls.filter((c) => c.path.endsWith('/authenticate') && c.key === key).length;
      expect(authentications(BETA.access_key)).toBe(1);
      expect(authentications(DEPLOYMENT.access_key)).toBe(1);
    });
  });

  describe('when the poller runs while a source has a key of its own', () => {
    it('reads every record with the deployment key', async () => {
      const from = calls.length;
      await root.poller().runOnce('applications');
      const polled = calls.slice(from);
      expect(polled.length).toBeGreaterThan(0);
      expect(new Set(polled.map((c) => c.key))).toEqual(new Set([DEPLOYMENT.access_key]));
    });
  });

  describe('when everything above was logged at trace level', () => {
    it('holds no secret key, no API token and no webhook secret', () => {
      const out = logLines.join('');
      expect(out.length).toBeGreaterThan(0);
      expect(out).toContain('"commandSource":"beta"'); // the lines about beta's commands are there
      expect(tokens.size).toBeGreaterThan(1);
      for (const secret of [
        BETA.secret_key,
        DEPLOYMENT.secret_key,
        ...tokens,
        ...webhookSecrets.acme,
        ...webhookSecrets.beta,
      ])
        expect(out, 'a secret was logged').not.toContain(secret);
    });
  });
});
