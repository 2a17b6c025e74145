import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { createCompositionRoot, type CompositionRoot } from '../../src/app/composition-root.js';
import type { HttpRole } from '../../src/app/http-role.js';
import { loadConfig } from '../../src/config/config.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import type { CommandOutcome } from '../../src/contracts/outcomes.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { buildRegistration, buildSecret, send } from '../receiver/webhooks.js';
import { createHarness, FAST_GUARD, logger, uid, type Harness } from '../consumers/support/harness.js';

/**
 * Issue 51 item 1: two PMS sources on one bridge, each with a Partner API key of its own scoped to
 * its owners (spec 5.9) on the sandbox. `beta` tries every path into `acme`'s tenants: a customer
 * token, a payment, a decision, a registration with an acme tenant's e-mail, and status reads.
 * Each is refused or reveals nothing, and the platform's 404 ends a command `rejected` without a
 * retry. The same attempts with the sources sharing the deployment key (PMS_SHARED_PARTNER_KEY=
 * trusted: what every two-source deployment did before) all reach acme's tenants: that is what
 * "trusted" means, and the before/after figures of the issue.
 */
const SECRETS = { acme: buildSecret(), beta: buildSecret() };
const KEYS = {
  acme: { access_key: 'acme-scoped-key', secret_key: 'acme-scoped-secret', scoped: true },
  beta: { access_key: 'beta-scoped-key', secret_key: 'beta-scoped-secret', scoped: true },
};
const OWNER = { acme: 'owner-acme', beta: 'owner-beta' };

type Mode = 'scoped' | 'shared';

/** What one mode's attempts across the line got: true when beta reached acme's tenant. */
type Reached = Record<'token' | 'payment' | 'decision' | 'registration' | 'statusRead', boolean>;
const figures: Partial<Record<Mode, Reached>> = {};

function sourcesOnOneBridge(mode: Mode) {
  let h: Harness;
  let root: CompositionRoot;
  let http: HttpRole;
  let base: string;
  const consumers: Array<ReturnType<CompositionRoot['commandConsumer']>> = [];
  const acme = { customer: 0, email: '', enrollment: 0, application: 0, commandId: '' };

  beforeAll(async () => {
    h = await createHarness();
    for (const source of ['acme', 'beta'] as const)
      await h.control.createKey({ ...KEYS[source], owner_ids: [OWNER[source]] });
    const config = loadConfig({
      DATABASE_URL: h.database.url,
      KAFKA_BROKERS: h.kafka.brokers.join(','),
      KAFKA_TOPIC_PREFIX: h.kafka.prefix,
      PARTNER_TIMEOUT_MS: '1500',
      PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [SECRETS.acme], beta: [SECRETS.beta] }),
      ...(mode === 'scoped'
        ? { PMS_PARTNER_KEYS: JSON.stringify(KEYS) }
        : { PMS_SHARED_PARTNER_KEY: 'trusted' }),
      LOG_LEVEL: 'silent',
      HTTP_PORT: '0',
    });
    root = createCompositionRoot(config, logger);
    root.usePartnerUrl(h.sandbox.url);
    for (const name of ['application-decisions', 'rental-payments', 'customer-registrations'] as const) {
      const consumer = root.commandConsumer(name, { guard: FAST_GUARD });
      await consumer.start();
      consumers.push(consumer);
    }
    http = root.http();
    await http.start();
    base = `http://127.0.0.1:${http.port}`;
    // acme's tenant: a customer, an active enrollment, an application, all of acme's owner.
    acme.email = `${uid('acme-tenant')}@example.com`;
    const [customer] = await h.control.addRecords('customers', [
      { first_name: 'Ann', last_name: 'Acme', email: acme.email, phone: '5550002222', owner_id: OWNER.acme },
    ]);
    acme.customer = Number(customer!.id);
    const [enrollment] = await h.control.addRecords('enrollments', [
      { customer_id: acme.customer, status: 'active', rental_payments: [], owner_id: OWNER.acme },
    ]);
    acme.enrollment = Number(enrollment!.id);
    const [application] = await h.control.addRecords('applications', [
      { status: 'submitted', owner_id: OWNER.acme },
    ]);
    acme.application = Number(application!.id);
    // One command of acme's own, for beta to ask about.
    acme.commandId = await command('acme', 'decision', { application_id: String(acme.application) });
    await h.outcomesOf(acme.commandId);
  });

  afterAll(async () => {
    await http?.stop();
    for (const c of consumers) await c.stop();
    await root?.close();
    await h?.close();
  });

  /** A command as the receiver publishes a PMS source's webhook (CloudEvent source `/webhooks/pms/<source>`). */
  async function command(
    source: 'acme' | 'beta',
    kind: 'decision' | 'payment' | 'registration',
    data: Record<string, unknown>,
  ): Promise<string> {
    const spec = {
      decision: {
        id: uid(`dec-${source}`),
        field: 'decision_id',
        type: COMMAND_TYPES.applicationDecision,
        topic: TOPICS.applicationDecisions,
        extra: { decision: 'approve' },
        key: String(data.application_id),
      },
      payment: {
        id: uid(`pay-${source}`),
        field: 'payment_id',
        type: COMMAND_TYPES.rentalPayment,
        topic: TOPICS.rentalPayments,
        extra: { amount_cents: 125_000, paid_on: '2026-11-01', period: '2026-11' },
        key: String(data.enrollment_id),
      },
      registration: {
        id: uid(`reg-${source}`),
        field: 'registration_id',
        type: COMMAND_TYPES.customerRegistration,
        topic: TOPICS.customerRegistrations,
        extra: {},
        key: String(data.email),
      },
    }[kind];
    const event = toCloudEvent({
      id: `evt-${spec.id}`,
      source: `/webhooks/pms/${source}`,
      type: spec.type,
      subject: spec.id,
      data: { ...spec.extra, ...data, [spec.field]: spec.id },
    });
    await h.publish(spec.topic, spec.key, JSON.stringify(event));
    return spec.id;
  }

  /** `GET /pms/<source>/commands/<id>`, signed with the source's secret as a PMS signs it. */
  async function statusRead(source: 'acme' | 'beta', commandId: string) {
    const path = `/pms/${source}/commands/${encodeURIComponent(commandId)}`;
    const id = uid('msg');
    const at = new Date();
    const res = await fetch(`${base}${path}`, {
      headers: {
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(SECRETS[source]).sign(id, at, `GET ${path}`),
      },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  const reached = {} as Reached;
  afterAll(() => {
    figures[mode] = reached;
  });

  const scoped = mode === 'scoped';
  const expectation = scoped ? 'is refused' : 'reaches acme (the sources trust each other)';

  it(`a customer token for acme's customer, asked by beta, ${expectation}`, async () => {
    const res = await send(
      base,
      '/pms/beta/customer-access-tokens',
      { customer_id: String(acme.customer) },
      {
        secret: SECRETS.beta,
      },
    );
    reached.token = res.status === 200;
    if (scoped) {
      expect(res.status).toBe(404);
      expect(JSON.stringify(res.json)).not.toMatch(/"token"/);
    } else expect(res.status).toBe(200);
  });

  /** The command's one outcome, and the writes it sent to `path`. */
  async function settled(commandId: string, path: string): Promise<[CommandOutcome, number]> {
    const [outcome] = await h.outcomesOf(commandId);
    return [outcome!, (await h.writesTo(path)).length];
  }

  it(`a payment by beta to acme's enrollment ${expectation}${scoped ? ': rejected on the 404, one write, no retry' : ''}`, async () => {
    const before = (await h.control.records('enrollments')).find((r) => Number(r.id) === acme.enrollment);
    const id = await command('beta', 'payment', { enrollment_id: String(acme.enrollment) });
    const path = `/partner/v1/enrollments/${acme.enrollment}/report_rental_payments`;
    const [outcome, writes] = await settled(id, path);
    const after = (await h.control.records('enrollments')).find((r) => Number(r.id) === acme.enrollment);
    const added =
      (after!.rental_payments as unknown[]).length - (before!.rental_payments as unknown[]).length;
    reached.payment = added > 0;
    if (scoped) {
      expect(outcome).toMatchObject({
        status: 'rejected',
        attempts: 1,
        error: { status: 404, code: 'not_found' },
      });
      expect(writes).toBe(1);
      expect(added).toBe(0);
    } else expect(outcome).toMatchObject({ status: 'applied' });
  });

  it(`a decision by beta on acme's application ${expectation}${scoped ? ': rejected on the 404, one write' : ''}`, async () => {
    const [application] = await h.control.addRecords('applications', [
      { status: 'submitted', owner_id: OWNER.acme },
    ]);
    const id = await command('beta', 'decision', { application_id: String(application!.id) });
    const [outcome, writes] = await settled(id, `/partner/v1/applications/${application!.id}/approve`);
    const status = (await h.control.records('applications')).find((r) => r.id === application!.id)?.status;
    reached.decision = status === 'approved';
    if (scoped) {
      expect(outcome).toMatchObject({ status: 'rejected', attempts: 1, error: { status: 404 } });
      expect(writes).toBe(1);
      expect(status).toBe('submitted');
    } else expect(outcome).toMatchObject({ status: 'applied' });
  });

  it(`a registration by beta with an acme tenant's e-mail ends email_in_use, ${scoped ? 'naming no customer' : "naming acme's customer"}`, async () => {
    const id = await command('beta', 'registration', buildRegistration({ email: acme.email }));
    const [outcome] = await h.outcomesOf(id);
    reached.registration = outcome!.existing_customer_id === String(acme.customer);
    expect(outcome).toMatchObject({ status: 'rejected', error: { code: 'email_in_use' } });
    if (scoped) {
      expect(outcome!.existing_customer_id).toBeUndefined();
      expect(JSON.stringify(outcome)).not.toContain(`"${acme.customer}"`);
    } else expect(outcome!.existing_customer_id).toBe(String(acme.customer));

    // Beta's status read of its own registration says no more than its outcome did; of acme's
    // command, nothing at all.
    const own = await statusRead('beta', id);
    expect(own.status).toBe(200);
    const across = await statusRead('beta', acme.commandId);
    expect(across.status).toBe(404);
    expect(JSON.stringify(across.body)).not.toContain(acme.commandId.slice(4));
    reached.statusRead = JSON.stringify(own.body).includes(`"existing_customer_id":"${acme.customer}"`);
    expect(reached.statusRead).toBe(!scoped);
  });

  if (scoped) {
    it('a registration by beta with an e-mail its own key sees names that customer', async () => {
      const email = `${uid('beta-tenant')}@example.com`;
      const [mine] = await h.control.addRecords('customers', [
        { first_name: 'Bo', last_name: 'Beta', email, phone: '5550003333', owner_id: OWNER.beta },
      ]);
      const id = await command('beta', 'registration', buildRegistration({ email }));
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({
        status: 'rejected',
        error: { code: 'email_in_use' },
        existing_customer_id: String(mine!.id),
      });
    });
  }
}

describe('two PMS sources, each with its own scoped key', () => sourcesOnOneBridge('scoped'));
describe('two PMS sources sharing the deployment key by trust (as every deployment did before)', () =>
  sourcesOnOneBridge('shared'));

afterAll(() => {
  // The figures: attempts across the line that reached the other source's tenant.
  const count = (r: Reached | undefined) => (r ? Object.values(r).filter(Boolean).length : 0);
  console.log(
    `cross-source attempts that reached acme's tenants: shared key ${count(figures.shared)}/5 ${JSON.stringify(figures.shared)}; own scoped keys ${count(figures.scoped)}/5 ${JSON.stringify(figures.scoped)}`,
  );
});
