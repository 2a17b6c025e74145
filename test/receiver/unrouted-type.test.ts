import { Writable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { Relay } from '../../src/relay/relay.js';
import { createTypeLabeler } from '../../src/receiver/unrouted-answer.js';
import { traceId } from '../../src/event-trace/trace.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';
import { buildRentPayment, buildSecret, send, type TestReceiver } from './webhooks.js';

const acme = buildSecret();
const partner = buildSecret();

/** A counter's value in a /metrics scrape (0 when the series is absent). */
function counter(scrape: string, name: string, labels: string): number {
  const line = scrape.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

describe('a webhook of a mistyped event type', () => {
  const logLines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const app = useApp({
    topics: 'all',
    receiver: {
      partnerSecrets: [partner],
      pmsSecrets: { acme: [acme] },
      logger: createLogger({ level: 'info' }, sink),
    },
    relay: { start: false },
  });
  let database: TestDatabase;
  let kafka: TestKafka;
  let receiver: TestReceiver;
  let relay: Relay;

  beforeAll(() => ({ database, kafka, receiver, relay } = app));

  const scrape = async () => (await fetch(`${receiver.url}/metrics`)).text();
  const mistyped = () => ({ ...buildRentPayment(), type: 'rent_payment.recieved' });

  describe('when a PMS sends rent_payment.recieved', () => {
    it('keeps it, and the 202 names the topic, routed: false and the types that source may send', async () => {
      const res = await send(receiver.url, '/webhooks/pms/acme', mistyped(), { secret: acme });
      expect(res.status).toBe(202);
      expect(res.json).toEqual({
        accepted: true,
        event_id: expect.any(String),
        routed: false,
        topic: 'inbound.unrouted',
        known_types: expect.arrayContaining(['rent_payment.received', 'application.decided']),
      });
      expect(res.json.known_types).not.toContain('rent_payment.recieved');
      await relay.drain();
      const [message] = await kafka.readMessages('inbound.unrouted', 1);
      expect(message?.key?.toString()).toBe(res.webhookId);
    });

    it('logs a warning naming the source, the webhook and the type', async () => {
      const res = await send(receiver.url, '/webhooks/pms/acme', mistyped(), { secret: acme });
      expect(res.status).toBe(202);
      expect(logLines).toContainEqual(
        expect.objectContaining({
          level: 'warn',
          source: 'pms:acme',
          webhookId: res.webhookId,
          eventType: 'rent_payment.recieved',
        }),
      );
    });

    it('counts it by source and type on /metrics', async () => {
      const name = 'rentbridge_webhooks_unrouted_total';
      const labels = 'source="pms:acme",type="rent_payment.recieved"';
      const before = counter(await scrape(), name, labels);
      await send(receiver.url, '/webhooks/pms/acme', mistyped(), { secret: acme });
      expect(counter(await scrape(), name, labels)).toBe(before + 1);
    });

    it('ends its trace with "unknown type: kept on inbound.unrouted, nothing consumes it"', async () => {
      const res = await send(receiver.url, '/webhooks/pms/acme', mistyped(), { secret: acme });
      await relay.drain();
      const trace = await traceId(database.db, res.webhookId, {
        topicPrefix: kafka.prefix,
        retentionHours: 72,
      });
      expect(trace.ends).toContainEqual(
        expect.stringContaining('unknown type: kept on inbound.unrouted, nothing consumes it'),
      );
      expect(trace.ends.join('\n')).toContain('rent_payment.recieved');
    });
  });

  describe('when the partner sends a type it does not route', () => {
    it('lists the partner record events as the types it may send', async () => {
      const res = await send(
        receiver.url,
        '/webhooks/partner',
        { type: 'lease.signed', data: {} },
        { secret: partner },
      );
      expect(res.status).toBe(202);
      expect(res.json).toMatchObject({ routed: false, topic: 'inbound.unrouted' });
      expect(res.json.known_types).toEqual(
        expect.arrayContaining(['application.updated', 'customer.deleted']),
      );
    });
  });

  describe('when a sender invents ever new types', () => {
    it('labels the first 20 of a source by name and every further one "other"', () => {
      const label = createTypeLabeler();
      const names = Array.from({ length: 25 }, (_, i) => label('pms:acme', `type.${i}`));
      expect(new Set(names).size).toBe(21);
      expect(names.slice(20)).toEqual(['other', 'other', 'other', 'other', 'other']);
      expect(label('pms:acme', 'type.3')).toBe('type.3');
      expect(label('pms:other', 'type.99')).toBe('type.99');
      expect(label('pms:acme', 'x'.repeat(65))).toBe('other');
      expect(label('pms:acme', 'has space')).toBe('other');
    });
  });
});
