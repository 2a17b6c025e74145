import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompositionRoot, type CompositionRoot } from '../../src/app/composition-root.js';
import type { HttpRole } from '../../src/app/http-role.js';
import type { Overview } from '../../src/ops/overview/overview.js';
import { loadConfig } from '../../src/config/config.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { buildSecret } from '../receiver/webhooks.js';
import { createHarness, FAST_GUARD, headersOf, logger, uid, type Harness } from './support/harness.js';

/**
 * Issue 34: a PMS source with a Partner API key of its own acts only within that key's scope.
 * The consumer is built by the composition root from the configuration, as `rentbridge consumer`
 * builds it; commands arrive as the receiver publishes a PMS webhook (CloudEvent source
 * `/webhooks/pms/<source>`).
 */
const OPS_TOKEN = 'ops-token-for-source-keys';
const APPROVE = (id: number) => `/partner/v1/applications/${id}/approve`;
const KEYS = {
  beta: { access_key: 'beta-access-key', secret_key: 'beta-secret-key', scoped: true },
  gamma: { access_key: 'gamma-access-key', secret_key: 'gamma-secret-key', read_only: true },
};

describe('command consumers acting for PMS sources', () => {
  let h: Harness;
  let root: CompositionRoot;
  let consumers: Array<ReturnType<CompositionRoot['commandConsumer']>> = [];
  let http: HttpRole | undefined;

  beforeAll(async () => {
    h = await createHarness();
    await h.control.createKey({ ...KEYS.beta, owner_ids: ['owner-beta'] });
    await h.control.createKey({ ...KEYS.gamma, read_only: true });
    const config = loadConfig({
      DATABASE_URL: h.database.url,
      KAFKA_BROKERS: h.kafka.brokers.join(','),
      KAFKA_TOPIC_PREFIX: h.kafka.prefix,
      PARTNER_TIMEOUT_MS: '1500',
      PMS_WEBHOOK_SECRETS: JSON.stringify({
        acme: [buildSecret()],
        beta: [buildSecret()],
        gamma: [buildSecret()],
      }),
      PMS_PARTNER_KEYS: JSON.stringify(KEYS),
      // acme acts with the deployment key beside the others' own (the sources trust each other).
      PMS_SHARED_PARTNER_KEY: 'trusted',
      LOG_LEVEL: 'silent',
      HTTP_PORT: '0',
      OPS_TOKEN: OPS_TOKEN,
    });
    root = createCompositionRoot(config, logger);
    root.usePartnerUrl(h.sandbox.url);
    consumers = [
      root.commandConsumer('application-decisions', { guard: FAST_GUARD }),
      root.commandConsumer('customer-registrations', { guard: FAST_GUARD }),
      root.commandConsumer('enrollments', { guard: FAST_GUARD }),
    ];
    for (const c of consumers) await c.start();
    http = root.http();
    await http.start();
  });
  afterAll(async () => {
    await http?.stop();
    for (const c of consumers) await c.stop();
    await root?.close();
    await h?.close();
  });

  async function application(owner: string): Promise<number> {
    const [record] = await h.control.addRecords('applications', [{ status: 'submitted', owner_id: owner }]);
    return Number(record!.id);
  }

  /** A decision as the receiver publishes a PMS source's webhook. */
  async function decide(source: string, applicationId: number): Promise<string> {
    const decisionId = uid(`dec-${source}`);
    const event = toCloudEvent({
      id: `evt-${decisionId}`,
      source: `/webhooks/pms/${source}`,
      type: COMMAND_TYPES.applicationDecision,
      subject: decisionId,
      data: { decision_id: decisionId, application_id: String(applicationId), decision: 'approve' },
    });
    await h.publish(TOPICS.applicationDecisions, String(applicationId), JSON.stringify(event));
    return decisionId;
  }

  const statusOf = async (id: number) =>
    (await h.control.records('applications')).find((r) => Number(r.id) === id)?.status;

  describe('when a source with a scoped key decides an application inside its scope', () => {
    it('is applied with its key', async () => {
      const id = await application('owner-beta');
      const [outcome] = await h.outcomesOf(await decide('beta', id));
      expect(outcome).toMatchObject({ status: 'applied', attempts: 1 });
      expect(await statusOf(id)).toBe('approved');
    });
  });

  describe('when a source with a scoped key decides an application outside its scope', () => {
    it('is rejected with the platform error whole, one write, a dead letter naming the scope', async () => {
      const id = await application('owner-acme');
      const decisionId = await decide('beta', id);
      const [outcome] = await h.outcomesOf(decisionId);
      expect(outcome).toMatchObject({
        status: 'rejected',
        attempts: 1,
        error: {
          status: 404,
          code: 'not_found',
          message: expect.any(String),
          request_id: expect.any(String),
        },
      });
      const [letter] = await h.deadLettersOf(decisionId);
      const headers = headersOf(letter!.message.headers);
      expect(headers['dlq-reason']).toBe('rejected');
      expect(headers['dlq-error-status']).toBe('404');
      expect(headers['dlq-error-message']).toMatch(/outside the scope of source "beta"/);
      expect(JSON.parse(headers['dlq-error']!)).toEqual(outcome!.error);
      // Never retried, never read back as ambiguous: exactly one write, not applied.
      await new Promise((r) => setTimeout(r, 500));
      const writes = await h.writesTo(APPROVE(id));
      expect(writes).toHaveLength(1);
      expect(writes[0]).toMatchObject({ applied: false, status: 404 });
      expect(await statusOf(id)).toBe('submitted');
    });
  });

  describe('when a source without a key of its own decides the same kind of application', () => {
    it('behaves as before: the deployment key reaches every record', async () => {
      const id = await application('owner-acme');
      const [outcome] = await h.outcomesOf(await decide('acme', id));
      expect(outcome).toMatchObject({ status: 'applied', attempts: 1 });
      expect(await h.writesTo(APPROVE(id))).toHaveLength(1);
    });
  });

  describe('when a source with a scoped key registers and enrolls a customer', () => {
    it('creates both with its key, so both land in its scope', async () => {
      // The deployment key scoped away from beta's owner for this test: an enrollment made with it
      // (not with beta's key) would answer 404 and end rejected.
      const deployment = { access_key: 'sandbox-access-key', secret_key: 'sandbox-secret-key' };
      await h.control.createKey({ ...deployment, owner_ids: ['owner-acme'] });
      try {
        await registerAndEnroll();
      } finally {
        await h.control.createKey(deployment);
      }
    });

    async function registerAndEnroll() {
      const registrationId = uid('reg-beta');
      const email = `${registrationId}@example.com`;
      const event = toCloudEvent({
        id: `evt-${registrationId}`,
        source: '/webhooks/pms/beta',
        type: COMMAND_TYPES.customerRegistration,
        subject: registrationId,
        data: {
          registration_id: registrationId,
          pms_reference: 'tenant-1',
          first_name: 'Bo',
          last_name: 'Beta',
          email,
          phone: '5550001111',
          enroll: true,
        },
      });
      await h.publish(TOPICS.customerRegistrations, email, JSON.stringify(event));
      const [registered] = await h.outcomesOf(registrationId);
      expect(registered).toMatchObject({ status: 'applied' });
      const [enrolled] = await h.outcomesOf(`${registrationId}.enrollment`);
      expect(enrolled).toMatchObject({ status: 'applied' });
      // The sandbox gives what a scoped key creates its owner: the deployment key would give none.
      const customer = (await h.control.records('customers')).find((r) => r.email === email);
      expect(customer?.owner_id).toBe('owner-beta');
      const enrollment = (await h.control.records('enrollments')).find(
        (r) => String(r.customer_id) === String(customer?.id),
      );
      expect(enrollment?.owner_id).toBe('owner-beta');
    }
  });

  describe("when a source's key is read-only", () => {
    it('is rejected as outside the scope on its 403, with one write', async () => {
      const id = await application('owner-acme');
      const decisionId = await decide('gamma', id);
      const [outcome] = await h.outcomesOf(decisionId);
      expect(outcome).toMatchObject({ status: 'rejected', error: { status: 403, code: 'forbidden' } });
      const [letter] = await h.deadLettersOf(decisionId);
      expect(headersOf(letter!.message.headers)['dlq-error-message']).toMatch(
        /outside the scope of source "gamma"/,
      );
      expect(await h.writesTo(APPROVE(id))).toHaveLength(1);
    });
  });

  describe('when /metrics is scraped and the console overview read', () => {
    it('shows which key each source uses and that they share one by trust, never the key', async () => {
      const port = http!.port;
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(text).toContain('rentbridge_source_partner_key{source="beta",key="own"} 1');
      expect(text).toContain('rentbridge_source_partner_key{source="acme",key="deployment"} 1');
      expect(text).toContain('rentbridge_source_partner_key{source="acme",key="own"} 0');
      expect(text).toContain('rentbridge_sources_shared_key_trusted 1');
      expect(text).not.toContain('beta-access-key');

      const res = await fetch(`http://127.0.0.1:${port}/ops/api/overview`, {
        headers: { authorization: `Bearer ${OPS_TOKEN}` },
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as Overview;
      const figures = body.stages.find((s) => s.id === 'partner')!.figures;
      expect(figures).toContainEqual({ label: 'key of source beta', value: 'its own (PMS_PARTNER_KEYS)' });
      expect(figures).toContainEqual({
        label: 'key of source acme',
        value: 'the deployment key, shared with the other sources (PMS_SHARED_PARTNER_KEY=trusted)',
      });
      expect(figures).toContainEqual({
        label: 'sources held apart',
        value: "no: PMS_SHARED_PARTNER_KEY=trusted, each source can reach the others' tenants",
      });
      expect(JSON.stringify(body)).not.toMatch(/beta-access-key|beta-secret-key/);
    });
  });
});
