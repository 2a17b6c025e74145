import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventually } from './eventually.js';
import { useSandbox } from './sandbox-harness.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

describe('sandbox webhooks', () => {
  const h = useSandbox();
  let receiver: Server;
  let url: string;
  let received: Received[] = [];
  /** Statuses the receiver answers, in turn; 200 once they run out. */
  let script: number[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.statusCode = script.shift() ?? 200;
        res.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await new Promise((resolve) => receiver.close(resolve));
  });
  beforeEach(async () => {
    received = [];
    script = [];
    await h.control.setConfig({ webhook_url: url, webhook_secret: SECRET, webhook_retry_base_ms: 10 });
  });

  /** The first event received that matches. */
  const eventWhere = (match: (event: { type: string; data: Record<string, unknown> }) => boolean) =>
    eventually(async () => received.map((r) => JSON.parse(r.body)).find(match));

  const events = (n: number) =>
    eventually(async () => (received.length >= n ? received.map((r) => JSON.parse(r.body)) : undefined));

  describe('when state changes', () => {
    it('6: a decision POSTs application.updated with the record', async () => {
      const [application] = await h.control.addRecords('applications', [{ status: 'submitted' }]);
      await h.api('POST', `/partner/v1/applications/${application?.id}/approve`, { body: {} });
      const event = await eventWhere((e) => e.data.status === 'approved');
      expect(event).toEqual({
        type: 'application.updated',
        data: expect.objectContaining({ id: application?.id, status: 'approved' }),
      });
    });

    it('6: a payment report POSTs enrollment.updated with the payments', async () => {
      const [enrollment] = await h.control.addRecords('enrollments', [
        { status: 'active', rental_payments: [] },
      ]);
      await h.api('POST', `/partner/v1/enrollments/${enrollment?.id}/report_rental_payments`, {
        body: { rental_payments: [{ amount_cents: 1000, paid_on: '2026-03-01' }] },
      });
      const event = await eventWhere((e) => (e.data.rental_payments as unknown[]).length > 0);
      expect(event.type).toBe('enrollment.updated');
      expect(event.data.rental_payments).toHaveLength(1);
    });

    it('6: records added, patched and deleted through the control API emit events', async () => {
      const [unit] = await h.control.addRecords('units', [{ title: 'A' }]);
      await h.control.patchRecord('units', unit?.id as number, { title: 'B' });
      await h.control.deleteRecord('units', unit?.id as number);
      const list = await events(3);
      // Deliveries run concurrently: their arrival order is not promised.
      expect(list.map((e) => `${e.type} ${e.data.title}`).sort()).toEqual([
        'unit.deleted B',
        'unit.updated A',
        'unit.updated B',
      ]);
    });

    it('6: deliveries are signed with Standard Webhooks and verify with the secret', async () => {
      await h.control.addRecords('roles', [{ name: 'admin' }]);
      await events(1);
      const [delivery] = received;
      const headers = delivery?.headers as Record<string, string>;
      expect(headers['webhook-id']).toMatch(/^msg_/);
      expect(new Webhook(SECRET).verify(delivery?.body ?? '', headers)).toMatchObject({
        type: 'role.updated',
      });
    });

    it('6: nothing is sent when no webhook URL is configured', async () => {
      await h.control.setConfig({ webhook_url: null });
      await h.control.addRecords('roles', [{ name: 'admin' }]);
      expect(await h.control.webhooks()).toEqual([]);
    });
  });

  describe('when the receiver fails', () => {
    it('6: retries with back-off, the same webhook-id each time, until it is accepted', async () => {
      script = [500, 503];
      await h.control.addRecords('roles', [{ name: 'admin' }]);
      const [delivery] = await eventually(async () => {
        const list = await h.control.webhooks();
        return list[0]?.status === 'delivered' ? list : undefined;
      });
      expect(delivery?.attempts.map((a) => a.status)).toEqual([500, 503, 200]);
      expect(new Set(received.map((r) => r.headers['webhook-id']))).toEqual(new Set([delivery?.id]));
    });

    it('6: gives up after the configured attempts and marks the delivery failed', async () => {
      await h.control.setConfig({ webhook_max_attempts: 2 });
      script = [500, 500, 500];
      await h.control.addRecords('roles', [{ name: 'admin' }]);
      const [delivery] = await eventually(async () => {
        const list = await h.control.webhooks();
        return list[0]?.status === 'failed' ? list : undefined;
      });
      expect(delivery?.attempts).toHaveLength(2);
    });

    it('6: an unreachable URL is recorded as attempts without status', async () => {
      await h.control.setConfig({ webhook_url: 'http://127.0.0.1:1/nowhere', webhook_max_attempts: 1 });
      await h.control.addRecords('roles', [{ name: 'admin' }]);
      const [delivery] = await eventually(async () => {
        const list = await h.control.webhooks();
        return list[0]?.status === 'failed' ? list : undefined;
      });
      expect(delivery?.attempts[0]).toMatchObject({ status: null, error: expect.any(String) });
    });
  });
});
