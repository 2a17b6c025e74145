import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import type { KafkaMessage } from 'kafkajs';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEMO_PARTNER_WEBHOOK_SECRET, DEMO_PMS_WEBHOOK_SECRET } from '../../src/cli/commands/start.js';
import { ajvErrors, cloudEventOf, headerMap, loadContracts, type Contracts } from '../support/contracts.js';
import { demoEnv, spawnCli } from '../support/cli.js';
import { dropSchema } from '../support/db.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { freePort } from '../support/free-port.js';

/**
 * rentbridge held to its Kafka contracts the way a back-office would: the demo (`rentbridge
 * start` without PARTNER_API_URL) runs as its own process, webhooks are signed with the README's
 * demo secrets by another library, a dead letter is redriven through the ops API, and every
 * message of every topic is read back from the broker and checked with the CloudEvents SDK
 * (Kafka binding, structured mode), against docs/asyncapi.yaml (its resolved payload schemas)
 * and against docs/schemas with ajv.
 */

/** How long the demo gets to do each thing, polled once a second. */
const WAIT = { timeout: 90_000, interval: 1000 };

interface Read {
  topic: string;
  message: KafkaMessage;
}

describe('Kafka contracts, as an outside client reads them', () => {
  const schema = `s_${randomBytes(5).toString('hex')}`;
  const prefix = `${schema}.`;
  let child: ChildProcess;
  let log = '';
  let base = '';
  let contracts: Contracts;
  let kafka: TestKafka;
  const read: Read[] = [];
  const OPS = { authorization: 'Bearer rentbridge-demo-ops-token', 'content-type': 'application/json' };

  async function signed(path: string, secret: string, body: unknown): Promise<Response> {
    const id = `msg_${randomUUID()}`;
    const text = JSON.stringify(body);
    const now = new Date();
    return fetch(`${base}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(id, now, text),
      },
      body: text,
    });
  }

  const on = (logical: string) => read.filter((r) => r.topic === logical);
  /** Every topic of the contracts whose messages the demo writes whatever its data. */
  const writtenTopics = () =>
    [...contracts.channels.keys()].filter(
      (t) => !t.startsWith('partner.') && t !== 'commands.rental-payments.dlq', // data-dependent
    );

  beforeAll(async () => {
    contracts = await loadContracts();
    const [httpPort, sandboxPort] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${httpPort}`;
    child = spawnCli(
      ['start', '--demo'],
      {
        ...demoEnv(schema, httpPort, sandboxPort),
        PARTNER_WEBHOOK_SECRETS: '',
        PMS_WEBHOOK_SECRETS: '{}',
        LOG_LEVEL: 'info',
      },
      (text) => (log += text),
    );
    await vi.waitFor(async () => expect((await fetch(`${base}/readyz`)).ok, 'ready').toBe(true), WAIT);

    // What the demo does not send by itself: a webhook of a type nobody routes, and a Partner API
    // webhook (the record id a number, as the API sends it), both signed with the README's secrets.
    expect(
      (
        await signed('/webhooks/pms/demo-pms', DEMO_PMS_WEBHOOK_SECRET, {
          type: 'lease.signed',
          data: { lease: 7 },
        })
      ).status,
    ).toBe(202);
    const partnerRecord = { id: 4242, updated_at: '2026-11-23T10:00:00Z', status: 'submitted' };
    const partner = await signed('/webhooks/partner', DEMO_PARTNER_WEBHOOK_SECRET, {
      type: 'application.updated',
      data: partnerRecord,
    });
    expect(partner.status).toBe(202);

    // Onboarding commands that end rejected (an e-mail already taken, a customer that does not
    // exist), so their outcomes and dead letters are read too.
    const seeded = await fetch(`http://127.0.0.1:${sandboxPort}/__sandbox/records/customers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { first_name: 'Taken', last_name: 'Already', email: 'taken@example.com', phone: '5550100' },
      ]),
    });
    expect(seeded.status).toBe(201);
    const registration = await signed('/webhooks/pms/demo-pms', DEMO_PMS_WEBHOOK_SECRET, {
      type: 'customer.registration_requested',
      data: {
        registration_id: 'contract-reg-1',
        pms_reference: 'tenant-1',
        first_name: 'Taken',
        last_name: 'Again',
        email: 'taken@example.com',
        phone: '5550101',
      },
    });
    expect(registration.status).toBe(202);
    const enrollment = await signed('/webhooks/pms/demo-pms', DEMO_PMS_WEBHOOK_SECRET, {
      type: 'enrollment.requested',
      data: { enrollment_request_id: 'contract-enr-1', customer_id: '999999999' },
    });
    expect(enrollment.status).toBe(202);

    // The demo's doomed decision is dead-lettered; redrive it through the ops API.
    const letter = await vi.waitFor(async () => {
      // The application decision's letter: the onboarding commands above dead-letter too.
      const res = await fetch(`${base}/ops/api/dead-letters?topic=commands.application-decisions`, {
        headers: OPS,
      });
      const body = (await res.json()) as { items: Array<{ id: number; state: string }> };
      const open = body.items.find((l) => l.state === 'open');
      expect(open, 'a dead letter').toBeDefined();
      return open!;
    }, WAIT);
    const redrive = await fetch(`${base}/ops/api/dead-letters/${letter.id}/redrive`, {
      method: 'POST',
      headers: OPS,
      body: JSON.stringify({ reason: 'contract test' }),
    });
    expect(redrive.status).toBe(200);

    kafka = createTestKafka();
    const reader = kafka.kafka.consumer({ groupId: `contracts-${randomBytes(4).toString('hex')}` });
    await reader.connect();
    await reader.subscribe({ topics: [new RegExp(`^${prefix.replace(/\./g, '\\.')}`)], fromBeginning: true });
    await reader.run({
      eachMessage: async ({ topic, message }) => {
        read.push({ topic: topic.slice(prefix.length), message });
      },
    });
    let missing: number[] = [];
    try {
      await vi.waitFor(
        () => {
          const redriven = on('commands.application-decisions').some(
            (r) => headerMap(r.message.headers)['redrive-dead-letter-id'] === String(letter.id),
          );
          const kinds = [
            on('partner.applications').some((r) => headerMap(r.message.headers)['webhook-id']),
            on('partner.customers').length > 0,
            on('commands.rental-payments').length > 0,
            on('outcomes.application-decisions').length > 1,
            on('outcomes.rental-payments').length > 0,
            on('commands.application-decisions.dlq').length > 0,
            on('commands.customer-registrations.dlq').length > 0,
            on('commands.enrollments.dlq').length > 0,
            on('inbound.unrouted').length > 0,
            redriven,
          ];
          missing = kinds.flatMap((ok, i) => (ok ? [] : [i]));
          expect(missing, 'a message of every kind').toEqual([]);
          // And one of every topic the test below asks for (the reader stops when this passes).
          expect(writtenTopics().filter((t) => on(t).length === 0)).toEqual([]);
        },
        { ...WAIT, timeout: 120_000 },
      );
    } catch (error) {
      throw new Error(
        `${(error as Error).message}; kinds missing: ${missing.join(', ')}; log: ${log.slice(-3000)}`,
      );
    } finally {
      await reader.disconnect();
    }
  }, 240_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    if (kafka) {
      const admin = kafka.kafka.admin();
      await admin.connect();
      const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
      await admin.deleteTopics({ topics: mine }).catch(() => undefined);
      await admin.disconnect();
      await kafka.close();
    }
    await dropSchema(schema);
  });

  it('reads messages of every topic rentbridge writes', () => {
    const topics = new Set(read.map((r) => r.topic));
    for (const t of writtenTopics()) expect(topics, `no message on ${t}`).toContain(t);
  });

  it('every message is a CloudEvent by the Kafka binding, headers matching the value', () => {
    const failures: string[] = [];
    for (const { topic, message } of read) {
      try {
        if (isTombstone(contracts, topic, message)) continue;
        const event = cloudEventOf(message);
        const h = headerMap(message.headers);
        for (const name of ['content-type', 'ce_id', 'ce_type']) {
          if (!(name in h)) throw new Error(`no ${name} header`);
        }
        if (h.ce_id !== event.id || h.ce_type !== event.type)
          throw new Error('ce_id/ce_type differ from the value');
      } catch (error) {
        failures.push(`${topic}@${message.offset}: ${(error as Error).message}`);
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
    expect(read.length).toBeGreaterThan(100);
  });

  it('every message matches its channel in docs/asyncapi.yaml', () => {
    const failures: string[] = [];
    for (const { topic, message } of read) {
      if (isTombstone(contracts, topic, message)) continue;
      const channel = contracts.channels.get(topic);
      const value = JSON.parse(message.value!.toString()) as { type: string };
      const validate = channel?.get(value.type);
      if (!validate) failures.push(`${topic}: no message ${value.type} in docs/asyncapi.yaml`);
      else if (!validate(value)) failures.push(`${topic}@${message.offset}: ${ajvErrors(validate)}`);
    }
    expect(failures.slice(0, 10)).toEqual([]);
  });

  it('state changes carry data.record.id as a string, whoever saw the change', () => {
    const changes = read
      .filter((r) => r.topic.startsWith('partner.') && r.message.value !== null)
      .map(
        (r) =>
          JSON.parse(r.message.value!.toString()) as {
            data: { id: string; via: string; record: { id: unknown } };
          },
      );
    const validate = contracts.schema('state-change');
    for (const { data } of changes) {
      expect(validate(data), ajvErrors(validate)).toBe(true);
      expect(data.record.id).toBe(data.id);
    }
    const vias = new Set(changes.map((c) => c.data.via));
    expect(vias).toEqual(new Set(['poll', 'webhook']));
    expect(changes.find((c) => c.data.id === '4242')?.data.record.id).toBe('4242');
  });

  it('outcomes carry the trail of their webhook and a schema-valid error', () => {
    const validate = contracts.schema('command-outcome');
    const outcomes = read.filter((r) => r.topic.startsWith('outcomes.'));
    for (const { message } of outcomes) {
      const h = headerMap(message.headers);
      expect(h).toMatchObject({
        'webhook-id': expect.any(String),
        'request-id': expect.any(String),
        'command-id': expect.any(String),
      });
      const { data } = JSON.parse(message.value!.toString()) as { data: unknown };
      expect(validate(data), ajvErrors(validate)).toBe(true);
    }
    const rejected = outcomes
      .filter((r) => r.topic === 'outcomes.application-decisions')
      .map(
        (r) =>
          (
            JSON.parse(r.message.value!.toString()) as {
              data: { status: string; error?: Record<string, unknown> };
            }
          ).data,
      )
      .find((o) => o.status === 'rejected');
    expect(rejected?.error).toMatchObject({ code: 'not_found', status: 404, request_id: expect.any(String) });
  });

  it("dead letters keep the original's headers beside their dlq-* ones", () => {
    const [letter] = on('commands.application-decisions.dlq');
    const h = headerMap(letter!.message.headers);
    expect(h).toMatchObject({
      'content-type': 'application/cloudevents+json; charset=UTF-8',
      ce_type: 'rentbridge.command.application-decision',
      'webhook-id': expect.stringMatching(/^msg_/),
      'request-id': expect.any(String),
      'dlq-reason': 'rejected',
      'dlq-error-code': 'not_found',
    });
    expect(JSON.parse(h['dlq-error']!)).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('a redriven command keeps the trail of the original and names its letter', () => {
    const redriven = on('commands.application-decisions').find(
      (r) => headerMap(r.message.headers)['redrive-dead-letter-id'],
    );
    const h = headerMap(redriven!.message.headers);
    const original = on('commands.application-decisions').find(
      (r) => r !== redriven && headerMap(r.message.headers).ce_id === h.ce_id,
    );
    expect(h).toMatchObject({
      'webhook-id': headerMap(original!.message.headers)['webhook-id'],
      'request-id': headerMap(original!.message.headers)['request-id'],
      'redrive-by': expect.any(String),
      'redrive-at': expect.any(String),
    });
    expect(Object.keys(h).filter((k) => k.startsWith('dlq-'))).toEqual([]);
  });

  it('the start log names the demo webhook secrets the README documents', () => {
    expect(log).toContain(DEMO_PMS_WEBHOOK_SECRET);
  });
});

/**
 * A tombstone, as docs/asyncapi.yaml declares it: a null value only where the channel has a
 * `tombstone` message (the partner.<resource> changelogs), with a key and no CloudEvent headers.
 * Any other null value is a failure.
 */
function isTombstone(contracts: Contracts, topic: string, message: KafkaMessage): boolean {
  if (message.value !== null) return false;
  const h = headerMap(message.headers);
  const validate = contracts.channels.get(topic)?.get('tombstone');
  if (!validate?.(null) || !message.key?.length || 'ce_id' in h || 'content-type' in h)
    throw new Error(`${topic}@${message.offset}: a null value that is no changelog tombstone`);
  return true;
}
