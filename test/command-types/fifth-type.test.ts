import { CloudEvent } from 'cloudevents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Component } from '../../src/app/lifecycle.js';
import type { HttpRole } from '../../src/app/http-role.js';
import type { CommandOutcome } from '../../src/contracts/outcomes.js';
import type { Harness } from '../consumers/support/harness.js';
import type * as FifthType from '../support/fifth-type.js';
import type * as CallbackReceiver from '../callbacks/callback-receiver.js';

/**
 * Issue 40: adding a command type is its entry in the list of command types and its behaviour;
 * nothing else. A fifth type, registered the way an extension would (test/support/fifth-type.ts:
 * one entry; here: a behaviour that reports the payment as rental payments are reported), is
 * followed through the real parts: a signed PMS webhook routed by the receiver, the outbox and
 * the relay, its consumer (built by the composition root by name), the guarded write on the
 * sandbox, its outcome on its own topic (read back with the CloudEvents SDK), a callback to the
 * PMS, its consumer's heartbeat, and the JSON Schemas published for it.
 *
 * Everything is imported after the registration (dynamic imports in order): every list derived
 * from the list of command types is made when its module loads.
 */
const OPS_TOKEN = 'ops-token-for-the-fifth-type';

describe('a fifth command type, added as one entry and one behaviour', () => {
  let fifth: typeof FifthType;
  let h: Harness;
  let http: HttpRole;
  let components: Component[] = [];
  let closeRoot: () => Promise<void>;
  let receiver: Awaited<ReturnType<typeof CallbackReceiver.startReceiver>>;
  let until: typeof CallbackReceiver.until;
  let secret: string;

  beforeAll(async () => {
    fifth = await import('../support/fifth-type.js');
    const { registerCommandType } = await import('../../src/command-types/command-types.js');
    const { rentalPaymentReadBack } =
      await import('../../src/command-types/rental-payments/rental-payment-read-back.js');
    registerCommandType({
      ...fifth.BACKDATED_PAYMENT,
      // Its Partner API side: reported as a rental payment, and read back the same way.
      readBack: rentalPaymentReadBack as never,
    });
    const harness = await import('../consumers/support/harness.js');
    const { createCompositionRoot } = await import('../../src/app/composition-root.js');
    const { loadConfig } = await import('../../src/config/config.js');
    const { createRoleHeartbeat } = await import('../../src/ops/role-heartbeat.js');
    const { buildSecret } = await import('../receiver/webhooks.js');
    const callbackReceiver = await import('../callbacks/callback-receiver.js');
    until = callbackReceiver.until;

    h = await harness.createHarness();
    secret = buildSecret();
    const callbackSecrets = [buildSecret()];
    receiver = await callbackReceiver.startReceiver(
      { acme: () => ({ status: 200 }) },
      { acme: callbackSecrets },
    );
    const config = loadConfig({
      DATABASE_URL: h.database.url,
      KAFKA_BROKERS: h.kafka.brokers.join(','),
      KAFKA_TOPIC_PREFIX: h.kafka.prefix,
      PARTNER_TIMEOUT_MS: '1500',
      PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [secret] }),
      PMS_CALLBACKS: JSON.stringify({ acme: { url: receiver.url('acme'), secrets: callbackSecrets } }),
      CALLBACK_POLL_MS: '100',
      LOG_LEVEL: 'silent',
      HTTP_PORT: '0',
      OPS_TOKEN,
    });
    const root = createCompositionRoot(config, harness.logger);
    root.usePartnerUrl(h.sandbox.url);
    closeRoot = () => root.close();
    http = root.http();
    components = [
      http,
      root.relay(),
      root.commandConsumer(fifth.BACKDATED_PAYMENT.name, { guard: harness.FAST_GUARD }),
      root.callbacks()!,
      createRoleHeartbeat({
        db: h.database.db,
        logger: harness.logger,
        roles: () => [`consumer:${fifth.BACKDATED_PAYMENT.name}`],
      }),
    ];
    for (const c of components) await c.start();
  });

  afterAll(async () => {
    for (const c of [...components].reverse()) await c.stop();
    await closeRoot?.();
    await receiver?.close();
    await h?.close();
  });

  it('is routed, applied once, published, called back, seen running and published as a schema', async () => {
    const { send } = await import('../receiver/webhooks.js');
    const [enrollment] = await h.control.addRecords('enrollments', [
      { status: 'active', rental_payments: [] },
    ]);
    const command: FifthType.BackdatedPayment = {
      backdated_id: `late-${Date.now()}`,
      enrollment_id: String(enrollment!.id),
      amount_cents: 98_700,
      paid_on: '2026-09-03',
      period: '2026-09',
    };

    // Accepted and routed by the receiver (an unknown type would answer `routed: false`).
    const accepted = await send(
      `http://127.0.0.1:${http.port}`,
      '/webhooks/pms/acme',
      { type: fifth.BACKDATED_PAYMENT.pmsEventType, data: command },
      { secret },
    );
    expect(accepted.status).toBe(202);
    expect(accepted.json).toEqual({ accepted: true, event_id: expect.any(String) });

    // Its outcome on its outcome topic, a CloudEvent of its outcome type.
    const [outcome] = await h.received.waitFor((r) => r.topic === fifth.BACKDATED_PAYMENT.outcomeTopic);
    expect(outcome!.message.key!.toString()).toBe(command.enrollment_id);
    const event = new CloudEvent(JSON.parse(outcome!.message.value!.toString()) as never);
    expect(event.validate()).toBe(true);
    expect(event.type).toBe(fifth.BACKDATED_PAYMENT.outcomeType);
    expect(event.data).toMatchObject({
      command_type: 'backdated_payment',
      command_id: command.backdated_id,
      target_id: String(command.enrollment_id),
      status: 'applied',
    } satisfies Partial<CommandOutcome>);
    const { commandOutcomeSchema } = await import('../../src/contracts/outcomes.js');
    expect(commandOutcomeSchema.safeParse(event.data).success).toBe(true);

    // Applied once on the platform.
    const [ledger] = (await h.control.records('enrollments')).filter((r) => r.id === enrollment!.id);
    expect(ledger!.rental_payments).toHaveLength(1);

    // Called back to the PMS it came from, the body as on Kafka.
    const callback = await until('the callback', () => receiver.received.find((r) => r.source === 'acme'));
    expect(callback.body).toBe(outcome!.message.value!.toString());

    // Its consumer's heartbeat is one the console expects.
    const { EXPECTED_ROLES, roleLastSeen } = await import('../../src/ops/role-heartbeat.js');
    expect(EXPECTED_ROLES).toContain('consumer:backdated-payments');
    await until('the heartbeat', async () =>
      (await roleLastSeen(h.database.db)).get('consumer:backdated-payments') != null ? true : undefined,
    );

    // Its topics are created by `rentbridge topics`, its schemas published, its kind a filter.
    const { allTopics } = await import('../../src/kafka/topics.js');
    expect(allTopics()).toEqual(
      expect.arrayContaining([
        'commands.backdated-payments',
        'commands.backdated-payments.dlq',
        'outcomes.backdated-payments',
      ]),
    );
    const { publishedSchemas } = await import('../../src/contracts/published-schemas.js');
    expect(Object.keys(publishedSchemas())).toEqual(
      expect.arrayContaining(['backdated-payment-command', 'pms-rent-payment-backdated']),
    );
    const filters = await fetch(`http://127.0.0.1:${http.port}/ops/api/filters`, {
      headers: { authorization: `Bearer ${OPS_TOKEN}` },
    }).then((r) => r.json() as Promise<{ command_types: string[] }>);
    expect(filters.command_types).toContain('backdated_payment');
  });
});
