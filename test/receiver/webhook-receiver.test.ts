import { beforeAll, describe, expect, it } from 'vitest';
import type { KafkaMessage } from 'kafkajs';
import { Webhook } from 'standardwebhooks';
import { parseCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import type { Relay } from '../../src/relay/relay.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';
import {
  buildDecision,
  buildRentPayment,
  buildSecret,
  send,
  startReceiver,
  type TestReceiver,
} from './webhooks.js';

const acme = buildSecret();
const acmeNext = buildSecret();
const partner = buildSecret();

describe('webhook receiver', () => {
  const app = useApp({
    topics: 'all',
    receiver: { partnerSecrets: [partner], pmsSecrets: { acme: [acme, acmeNext] } },
    relay: { start: false },
  });
  let database: TestDatabase;
  let kafka: TestKafka;
  let receiver: TestReceiver;
  let relay: Relay;

  beforeAll(() => ({ database, kafka, receiver, relay } = app));

  async function messageCount(topic: string): Promise<number> {
    const admin = kafka.kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets(`${kafka.prefix}${topic}`);
      return offsets.reduce((n, o) => n + Number(o.high), 0);
    } finally {
      await admin.disconnect();
    }
  }
  const header = (m: KafkaMessage, name: string) => m.headers?.[name]?.toString();
  const outboxCount = async () =>
    Number((await database.sql.query<{ n: string }>('SELECT count(*) AS n FROM outbox')).rows[0]?.n);

  describe('when a PMS sends a signed rent payment', () => {
    it('answers 202 and publishes exactly one command keyed by the enrollment', async () => {
      const body = buildRentPayment({ enrollment_id: 'enr-1' });
      const res = await send(receiver.url, '/webhooks/pms/acme', body, {
        secret: acme,
        headers: { 'x-request-id': 'req-rent-1' },
      });
      expect(res.status).toBe(202);
      expect(res.json).toEqual({ accepted: true, event_id: expect.any(String) });
      expect(res.headers.get('x-request-id')).toBe('req-rent-1');

      await relay.drain();
      const [message] = await kafka.readMessages('commands.rental-payments', 1);
      expect(message?.key?.toString()).toBe('enr-1');
      const event = parseCloudEvent(message!.value);
      expect(event).toMatchObject({
        specversion: '1.0',
        id: res.json.event_id,
        type: COMMAND_TYPES.rentalPayment,
        source: '/webhooks/pms/acme',
        data: body.data,
      });
      expect(header(message!, 'content-type')).toContain('application/cloudevents+json');
      expect(header(message!, 'ce_id')).toBe(res.json.event_id);
      expect(header(message!, 'ce_type')).toBe(COMMAND_TYPES.rentalPayment);
      expect(header(message!, 'webhook-id')).toBe(res.webhookId);
      expect(header(message!, 'request-id')).toBe('req-rent-1');
      expect(await messageCount('commands.rental-payments')).toBe(1);
    });
  });

  describe('when a PMS sends an application decision signed with the rotated-in secret', () => {
    it('accepts it and publishes a command keyed by the application', async () => {
      const body = buildDecision({ application_id: 991 });
      const res = await send(receiver.url, '/webhooks/pms/acme', body, { secret: acmeNext });
      expect(res.status).toBe(202);
      await relay.drain();
      const [message] = await kafka.readMessages('commands.application-decisions', 1);
      expect(message?.key?.toString()).toBe('991');
      const event = parseCloudEvent(message!.value);
      expect(event.type).toBe(COMMAND_TYPES.applicationDecision);
      expect(event.id).toBe(res.json.event_id);
      expect(event.data).toMatchObject({ application_id: '991', decision: 'approve' });
    });
  });

  describe('when the Partner API sends a record change', () => {
    it('publishes a state change on partner.<resource>, and a second delivery of the version is not republished', async () => {
      const record = { id: 555, status: 'approved', updated_at: '2026-11-20T10:00:00Z' };
      const res = await send(
        receiver.url,
        '/webhooks/partner',
        { type: 'application.updated', data: record },
        { secret: partner },
      );
      expect(res.status).toBe(202);
      expect(res.json.event_id).toEqual(expect.any(String));
      // Same version, new webhook-id (a resend): accepted, nothing new published.
      const again = await send(
        receiver.url,
        '/webhooks/partner',
        { type: 'application.updated', data: record },
        { secret: partner },
      );
      expect(again.status).toBe(202);
      expect(again.json.event_id).toBeUndefined();

      await relay.drain();
      const [message] = await kafka.readMessages('partner.applications', 1);
      expect(message?.key?.toString()).toBe('555');
      const event = parseCloudEvent(message!.value);
      expect(event).toMatchObject({ id: res.json.event_id, type: 'partner.application.updated' });
      // record.id is a string on the topic, as when the poller publishes the record (issue 16).
      expect(event.data).toMatchObject({
        id: '555',
        via: 'webhook',
        removed: false,
        record: { ...record, id: '555' },
      });
      expect(await messageCount('partner.applications')).toBe(1);
    });

    it('publishes a removal for a deleted record', async () => {
      const record = { id: 'u-1', updated_at: '2026-11-20T11:00:00Z' };
      const res = await send(
        receiver.url,
        '/webhooks/partner',
        { type: 'unit.deleted', data: record },
        { secret: partner },
      );
      expect(res.status).toBe(202);
      await relay.drain();
      const [message] = await kafka.readMessages('partner.units', 1);
      expect(parseCloudEvent(message!.value)).toMatchObject({
        id: res.json.event_id,
        type: 'partner.unit.removed',
      });
    });
  });

  describe('when the same webhook-id arrives twice', () => {
    it('answers 200 duplicate the second time and writes nothing', async () => {
      const body = buildRentPayment();
      const first = await send(receiver.url, '/webhooks/pms/acme', body, {
        secret: acme,
        webhookId: 'msg_dup_1',
      });
      expect(first.status).toBe(202);
      const before = await outboxCount();
      const second = await send(receiver.url, '/webhooks/pms/acme', body, {
        secret: acme,
        webhookId: 'msg_dup_1',
      });
      expect(second.status).toBe(200);
      expect(second.json).toEqual({ accepted: true, duplicate: true });
      expect(await outboxCount()).toBe(before);
    });

    it('answers duplicate to concurrent repeats too, writing one row', async () => {
      const body = buildRentPayment();
      const before = await outboxCount();
      const answers = await Promise.all(
        Array.from({ length: 5 }, () =>
          send(receiver.url, '/webhooks/pms/acme', body, { secret: acme, webhookId: 'msg_dup_2' }),
        ),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 202]);
      expect(await outboxCount()).toBe(before + 1);
    });
  });

  describe('when a signed event has a type nobody routes', () => {
    it('accepts it and publishes it on inbound.unrouted keyed by webhook-id', async () => {
      const body = { type: 'lease.signed', data: { lease: 1 } };
      const res = await send(receiver.url, '/webhooks/pms/acme', body, { secret: acme });
      expect(res.status).toBe(202);
      await relay.drain();
      const [message] = await kafka.readMessages('inbound.unrouted', 1);
      expect(message?.key?.toString()).toBe(res.webhookId);
      expect(parseCloudEvent(message!.value)).toMatchObject({
        id: res.json.event_id,
        type: 'rentbridge.inbound.unrouted',
        data: { source: 'pms:acme', received_type: 'lease.signed', payload: body },
      });
    });
  });

  describe('when the input is bad', () => {
    const path = '/webhooks/pms/acme';
    const expectRefused = async (res: Awaited<ReturnType<typeof send>>, status: number, code: string) => {
      expect(res.status).toBe(status);
      expect(res.json).toMatchObject({
        error: { status, code, request_id: res.headers.get('x-request-id') },
      });
    };

    it('refuses a missing signature with 401 and stores nothing', async () => {
      const before = await outboxCount();
      await expectRefused(
        await send(receiver.url, path, buildRentPayment(), { unsigned: true }),
        401,
        'unauthenticated',
      );
      expect(await outboxCount()).toBe(before);
    });

    it('refuses a signature made with another secret with 401', async () => {
      await expectRefused(
        await send(receiver.url, path, buildRentPayment(), { secret: buildSecret() }),
        401,
        'unauthenticated',
      );
    });

    it('refuses a body changed after signing with 401', async () => {
      const body = buildRentPayment();
      const signed = JSON.stringify(body);
      const webhookId = 'msg_tampered';
      const timestamp = Math.floor(Date.now() / 1000);
      const signature = new Webhook(acme).sign(webhookId, new Date(timestamp * 1000), signed);
      const tampered = await fetch(`${receiver.url}${path}`, {
        method: 'POST',
        body: signed.replace('125000', '1'),
        headers: {
          'webhook-id': webhookId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signature,
        },
      });
      expect(tampered.status).toBe(401);
    });

    it('refuses a timestamp older than the tolerance with 401', async () => {
      const res = await send(receiver.url, path, buildRentPayment(), {
        secret: acme,
        timestamp: Math.floor(Date.now() / 1000) - 600,
      });
      await expectRefused(res, 401, 'unauthenticated');
    });

    it('refuses an unknown PMS source with 401', async () => {
      await expectRefused(
        await send(receiver.url, '/webhooks/pms/nobody', buildRentPayment(), { secret: acme }),
        401,
        'unauthenticated',
      );
    });

    it('refuses a body over the limit with 413', async () => {
      const res = await send(
        receiver.url,
        path,
        buildRentPayment({ period: undefined, note: 'x'.repeat(5000) }),
        { secret: acme },
      );
      await expectRefused(res, 413, 'payload_too_large');
    });

    it('refuses a body that is not JSON with 400 invalid_request_body', async () => {
      await expectRefused(
        await send(receiver.url, path, null, { secret: acme, raw: '{"type": nope' }),
        400,
        'invalid_request_body',
      );
    });

    it('refuses a known type with a wrong shape with 422 naming each field', async () => {
      const before = await outboxCount();
      const res = await send(
        receiver.url,
        path,
        buildRentPayment({ amount_cents: 'lots', paid_on: undefined }),
        { secret: acme },
      );
      await expectRefused(res, 422, 'validation_error');
      const errors = (res.json.error as { errors: string[] }).errors;
      expect(errors).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^data\.amount_cents: expected number/),
          expect.stringMatching(/^data\.paid_on: /),
        ]),
      );
      expect(errors).toHaveLength(2);
      expect(await outboxCount()).toBe(before);
    });

    it('refuses text PostgreSQL cannot store (NUL) with 422 instead of failing', async () => {
      const res = await send(receiver.url, path, buildRentPayment({ payment_id: 'pay-\u0000' }), {
        secret: acme,
      });
      await expectRefused(res, 422, 'validation_error');
      expect((res.json.error as { errors: string[] }).errors).toEqual([
        'data.payment_id: NUL or unpaired surrogate',
      ]);
    });

    it('refuses a body whose content-encoding it does not have with 400', async () => {
      const res = await send(receiver.url, path, buildRentPayment(), {
        secret: acme,
        headers: { 'content-encoding': 'gzip' },
      });
      await expectRefused(res, 400, 'invalid_request_body');
    });

    it('refuses a partner change without an id with 422', async () => {
      const res = await send(
        receiver.url,
        '/webhooks/partner',
        { type: 'lead.updated', data: { updated_at: 'x' } },
        { secret: partner },
      );
      await expectRefused(res, 422, 'validation_error');
    });
  });

  describe('when asked for health', () => {
    it('answers healthz, readyz and metrics', async () => {
      expect((await fetch(`${receiver.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${receiver.url}/readyz`)).status).toBe(200);
      const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
      expect(metrics).toMatch(/rentbridge_webhooks_total\{source="pms:acme",result="accepted"\} \d+/);
    });
  });

  describe('when PostgreSQL cannot be reached', () => {
    it('answers 503 with Retry-After, acknowledges nothing, and takes the retry once it is back', async () => {
      const down = await startReceiver({
        db: database.db,
        databaseUrl: 'postgresql://postgres@127.0.0.1:1/unreachable',
        partnerSecrets: [partner],
        pmsSecrets: { acme: [acme] },
      });
      const event = buildRentPayment();
      try {
        const refused = await send(down.url, '/webhooks/pms/acme', event, { secret: acme });
        expect(refused.status).toBe(503);
        expect(refused.headers.get('retry-after')).toBe('5');
        expect(refused.json).toMatchObject({ error: { code: 'service_unavailable', status: 503 } });
        const again = await send(receiver.url, '/webhooks/pms/acme', event, {
          secret: acme,
          webhookId: refused.webhookId,
        });
        expect(again.status).toBe(202);
        expect(again.json.duplicate).toBeUndefined();
      } finally {
        await down.close();
      }
    });
  });
});
