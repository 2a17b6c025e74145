import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { withCallbackSteps } from '../../src/callbacks/callback-trace.js';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { traceId } from '../../src/event-trace/trace.js';
import { FAST_GUARD, headersOf, type Harness } from '../consumers/support/harness.js';
import { buildSecret } from '../receiver/webhooks.js';
import { useApp, type CallbackEndpoint } from '../support/app.js';
import { until } from './callback-receiver.js';

// ajv-formats is CommonJS with a default export.
const addFormats: FormatsPlugin =
  (addFormatsModule as unknown as { default?: FormatsPlugin }).default ??
  (addFormatsModule as unknown as FormatsPlugin);

/** docs/openapi.yaml's callback schema, as a PMS would check it (ajv, JSON Schema 2020-12). */
async function outcomeCallbackSchema() {
  const id = 'https://rentbridge.local/openapi.yaml';
  const doc = parseYaml(
    await readFile(new URL('../../docs/openapi.yaml', import.meta.url), 'utf8'),
  ) as object;
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addSchema({ ...doc, $id: id });
  return ajv.getSchema(`${id}#/components/schemas/OutcomeCallback`)!;
}

/**
 * A PMS's command through the command consumer to its outcome, and that outcome to the PMS's
 * callback endpoint: the body is the outcome as on Kafka, and the trace shows the delivery.
 */
describe('an outcome callback, from the command to the PMS', () => {
  const app = useApp({
    harness: true,
    consumers: [rentalPayments],
    consumerOverrides: { guard: FAST_GUARD },
    callbacks: { secrets: { acme: [buildSecret()] } },
  });
  let h: Harness;
  let receiver: CallbackEndpoint;

  beforeAll(() => ({ harness: h, callbackEndpoint: receiver } = app));

  it('POSTs the outcome of a PMS id with "/", "#", spaces and non-ASCII letters, and the trace shows it', async () => {
    const [enrollment] = await h.control.addRecords('enrollments', [
      { status: 'active', rental_payments: [] },
    ]);
    const paymentId = `pms:7f3/zahlung #${randomUUID().slice(0, 8)} für Wohnung ${'ä'.repeat(200)}`.slice(
      0,
      255,
    );
    const command = {
      payment_id: paymentId,
      enrollment_id: Number(enrollment!.id),
      amount_cents: 125_000,
      paid_on: '2026-11-01',
      period: '2026-11',
    };
    await h.publish(
      TOPICS.rentalPayments,
      String(command.enrollment_id),
      JSON.stringify(
        toCloudEvent({
          id: randomUUID(),
          source: '/webhooks/pms/acme',
          type: COMMAND_TYPES.rentalPayment,
          data: command,
        }),
      ),
    );
    const [onKafka] = await h.received.waitFor(
      (r) =>
        r.topic === TOPICS.rentalPaymentOutcomes && headersOf(r.message.headers)['command-id'] === paymentId,
    );
    const callback = await until('the callback', () => receiver.received.find((r) => r.source === 'acme'));
    expect(callback.body).toBe(onKafka!.message.value!.toString());
    const event = JSON.parse(callback.body) as { id: string; data: { command_id: string; status: string } };
    expect(event.data).toMatchObject({ command_id: paymentId, status: 'applied' });
    expect(event.id).toMatch(/\.applied$/);
    expect(callback.headers['webhook-id']).toBe(event.id);
    expect(callback.verifiedWith).toEqual([0]);
    const validate = await outcomeCallbackSchema();
    expect(validate(event), JSON.stringify(validate.errors)).toBe(true);

    await until('delivered', async () => {
      const { rows } = await h.database.sql.query(
        "SELECT 1 FROM callback_deliveries WHERE state = 'delivered'",
      );
      return rows.length === 1;
    });
    const trace = await withCallbackSteps(
      h.database.db,
      await traceId(h.database.db, paymentId, { topicPrefix: h.kafka.prefix, retentionHours: 72 }),
    );
    const steps = trace.steps.filter((s) => s.stage === 'callback').map((s) => s.what);
    expect(steps).toEqual([
      'outcome applied queued for the callback to acme',
      expect.stringMatching(/^callback #1 to acme → delivered 200 in \d+ ms$/),
    ]);
  });
});
