import { randomUUID } from 'node:crypto';
import type { KafkaMessage } from 'kafkajs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import type { Relay } from '../../src/relay/relay.js';
import { useApp } from '../support/app.js';
import type { TestKafka } from '../support/kafka.js';
import { buildSecret, send, type TestReceiver } from './webhooks.js';

const acme = buildSecret();

function buildRegistrationEvent(overrides: Record<string, unknown> = {}) {
  const id = randomUUID();
  return {
    type: 'customer.registration_requested',
    data: {
      registration_id: `reg-${id}`,
      pms_reference: `tenant-${id}`,
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: `Ada.${id}@Example.com`,
      phone: '5551234567',
      enroll: true,
      ...overrides,
    },
  };
}

describe('PMS onboarding events', () => {
  const app = useApp({
    topics: 'all',
    receiver: { partnerSecrets: [buildSecret()], pmsSecrets: { acme: [acme] } },
    relay: { start: false },
  });
  let kafka: TestKafka;
  let receiver: TestReceiver;
  let relay: Relay;

  beforeAll(() => ({ kafka, receiver, relay } = app));
  const header = (m: KafkaMessage, name: string) => m.headers?.[name]?.toString();

  describe('when a PMS asks for a customer registration', () => {
    it('becomes a command on commands.customer-registrations keyed by the lower-cased e-mail', async () => {
      const body = buildRegistrationEvent();
      const res = await send(receiver.url, '/webhooks/pms/acme', body, { secret: acme });
      expect(res.status).toBe(202);
      await relay.drain();
      const [message] = await kafka.readMessages('commands.customer-registrations', 1);
      expect(message?.key?.toString()).toBe(body.data.email.toLowerCase());
      expect(parseCloudEvent(message!.value)).toMatchObject({
        id: res.json.event_id,
        type: COMMAND_TYPES.customerRegistration,
        subject: body.data.registration_id,
        data: body.data,
      });
      expect(header(message!, 'ce_type')).toBe(COMMAND_TYPES.customerRegistration);
    });
  });

  describe('when a PMS asks for an enrollment', () => {
    it('becomes a command on commands.enrollments keyed by the customer id', async () => {
      const body = {
        type: 'enrollment.requested',
        data: { enrollment_request_id: `enr-${randomUUID()}`, customer_id: 42 },
      };
      const res = await send(receiver.url, '/webhooks/pms/acme', body, { secret: acme });
      expect(res.status).toBe(202);
      await relay.drain();
      const [message] = await kafka.readMessages('commands.enrollments', 1);
      expect(message?.key?.toString()).toBe('42');
      expect(parseCloudEvent(message!.value)).toMatchObject({
        type: COMMAND_TYPES.enrollment,
        data: { ...body.data, customer_id: '42' },
      });
    });
  });

  describe('when a registration is malformed', () => {
    it('answers 422 naming every failing field', async () => {
      const body = buildRegistrationEvent({
        email: 'not-an-address',
        phone: '555-123',
        registration_id: undefined,
      });
      const res = await send(receiver.url, '/webhooks/pms/acme', body, { secret: acme });
      expect(res.status).toBe(422);
      const errors = (res.json.error as { errors: string[] }).errors;
      expect(errors).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^data\.email:/),
          expect.stringMatching(/^data\.phone:/),
          expect.stringMatching(/^data\.registration_id:/),
        ]),
      );
    });
  });
});
