import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { storageCheck } from '../../src/app/readiness.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { buildRentPayment, buildSecret, send, startReceiver, type TestReceiver } from './webhooks.js';

/**
 * The receiver as a hostile sender meets it (issue 14): broken paths, bytes that are not UTF-8,
 * ids no index can hold, a database that does not answer, senders that trickle. Every answer is a
 * clear 4xx or a 503 with Retry-After, in the error envelope; nothing is acknowledged unstored.
 */
const acme = buildSecret();
const partner = buildSecret();

async function countRows(database: TestDatabase, sql: string): Promise<number> {
  return Number((await database.sql.query<{ n: string }>(sql)).rows[0]?.n);
}

describe('webhook receiver under hostile input', () => {
  let database: TestDatabase;
  let receiver: TestReceiver;

  beforeAll(async () => {
    database = await createTestDatabase();
    receiver = await startReceiver({
      db: database.db,
      databaseUrl: database.url,
      partnerSecrets: [partner],
      pmsSecrets: { acme: [acme] },
      maxBodyBytes: 200_000,
      maxEventBytes: 50_000,
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await database?.drop();
  });

  describe('when the path is not valid percent-encoding', () => {
    it.each(['/webhooks/pms/%', '/webhooks/pms/%E0%A4%A'])(
      'answers 400 in the envelope for %s',
      async (path) => {
        const res = await fetch(`${receiver.url}${path}`, { method: 'POST', body: '{}' });
        expect(res.status).toBe(400);
        const body = (await res.json()) as { error: { code: string; status: number; request_id: string } };
        expect(body.error).toMatchObject({
          status: 400,
          code: 'invalid_request',
          request_id: expect.any(String),
        });
      },
    );
  });

  describe('when the signature covers the raw bytes', () => {
    // 0xff and 0xfe are both invalid UTF-8: decoded, both become U+FFFD.
    const bodyWith = (byte: number) =>
      Buffer.concat([Buffer.from('{"type":"x.y","data":{"note":"'), Buffer.from([byte]), Buffer.from('"}}')]);

    it('accepts a sender that signed the bytes it sent, and refuses them as not UTF-8 after', async () => {
      const body = bodyWith(0xff);
      const res = await send(receiver.url, '/webhooks/pms/acme', null, {
        secret: acme,
        raw: body,
        signBytes: body,
      });
      // Verified (not 401), then decoded: JSON text must be UTF-8.
      expect(res.status).toBe(400);
      expect(res.json).toMatchObject({ error: { code: 'invalid_request_body' } });
    });

    it('does not let one signature verify two different bodies', async () => {
      // Signed over the body decoded with U+FFFD (what a receiver decoding first would check).
      const signed = bodyWith(0xff);
      const other = bodyWith(0xfe);
      const res = await send(receiver.url, '/webhooks/pms/acme', null, {
        secret: acme,
        raw: other,
        // The library signs the decoded text: the same text for both bodies.
      });
      expect(signed.toString('utf8')).toBe(other.toString('utf8'));
      expect(res.status).toBe(401);
    });
  });

  describe('when ids or timestamps are longer than any index holds', () => {
    it('answers 422 for a partner record with a 3,000-character id, and stores nothing', async () => {
      const before = await countRows(database, 'SELECT count(*) AS n FROM webhook_receipts');
      const res = await send(
        receiver.url,
        '/webhooks/partner',
        { type: 'application.updated', data: { id: 'a'.repeat(3000), updated_at: '2026-11-01T00:00:00Z' } },
        { secret: partner },
      );
      expect(res.status).toBe(422);
      expect(res.json).toMatchObject({ error: { code: 'validation_error', status: 422 } });
      expect(res.headers.get('retry-after')).toBeNull();
      expect(await countRows(database, 'SELECT count(*) AS n FROM webhook_receipts')).toBe(before);
    });

    it('answers 422 for a 3,000-character updated_at', async () => {
      const res = await send(
        receiver.url,
        '/webhooks/partner',
        {
          type: 'application.updated',
          data: { id: 'app-1', updated_at: `2026-11-01T00:00:00Z${'9'.repeat(3000)}` },
        },
        { secret: partner },
      );
      expect(res.status).toBe(422);
    });

    it('answers 422 for a 3,000-character payment id', async () => {
      const res = await send(
        receiver.url,
        '/webhooks/pms/acme',
        buildRentPayment({ payment_id: 'p'.repeat(3000) }),
        {
          secret: acme,
        },
      );
      expect(res.status).toBe(422);
    });
  });

  describe('when an id is a dot segment or holds a slash', () => {
    it.each([
      ['enrollment_id', '..'],
      ['enrollment_id', '.'],
      ['enrollment_id', 'a/../b'],
      ['enrollment_id', 'enr 1'],
      // A PMS's own id is any text but a control character (issue 27).
      ['payment_id', 'pay\u0085next'],
      ['payment_id', 'x'.repeat(256)],
    ])('answers 422 for %s = %j', async (field, value) => {
      const res = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment({ [field]: value }), {
        secret: acme,
      });
      expect(res.status).toBe(422);
      expect(JSON.stringify(res.json)).toContain(field);
    });

    it('still accepts the ids the pattern allows (dots inside, an integer)', async () => {
      const res = await send(
        receiver.url,
        '/webhooks/pms/acme',
        buildRentPayment({ enrollment_id: 42, payment_id: 'pay.2026-11_x' }),
        { secret: acme },
      );
      expect(res.status).toBe(202);
    });

    it('accepts a PMS command id as the PMS has it: it never goes into a path', async () => {
      for (const payment_id of ['..', 'pms:7f3/zahlung #7 für Wohnung', 'ü'.repeat(255)]) {
        const res = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment({ payment_id }), {
          secret: acme,
        });
        expect(res.status).toBe(202);
      }
    });
  });

  describe('when the event would be larger than Kafka may take', () => {
    it('answers 413 at ingest, before anything is stored', async () => {
      const before = await countRows(database, 'SELECT count(*) AS n FROM outbox');
      const res = await send(
        receiver.url,
        '/webhooks/pms/acme',
        { type: 'inventory.bulk', data: { blob: 'x'.repeat(60_000) } },
        { secret: acme },
      );
      expect(res.status).toBe(413);
      expect(res.json).toMatchObject({ error: { code: 'payload_too_large' } });
      expect(await countRows(database, 'SELECT count(*) AS n FROM outbox')).toBe(before);
    });

    it('accepts an event just under the bound', async () => {
      const res = await send(
        receiver.url,
        '/webhooks/pms/acme',
        { type: 'inventory.bulk', data: { blob: 'x'.repeat(40_000) } },
        { secret: acme },
      );
      expect(res.status).toBe(202);
    });
  });
});

describe('webhook receiver when PostgreSQL does not answer', () => {
  let database: TestDatabase;
  let receiver: TestReceiver;

  beforeAll(async () => {
    database = await createTestDatabase();
    receiver = await startReceiver({
      db: database.db,
      databaseUrl: database.url,
      partnerSecrets: [],
      pmsSecrets: { acme: [acme] },
      storageTimeoutMs: 1500,
      maxInFlight: 3,
      ready: async (writer) => ({ storage: await storageCheck(writer, 1500) }),
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await database?.drop();
  });

  it('answers 503 + Retry-After within the bound, holds no more than the cap, reports not ready, stores nothing', async () => {
    // A stall: the receipts table locked by another session, as a long migration or a hung
    // PostgreSQL would hold it.
    const blocker = await database.sql.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE webhook_receipts IN ACCESS EXCLUSIVE MODE');
    try {
      const started = Date.now();
      const waiting = [0, 1, 2].map(() =>
        send(receiver.url, '/webhooks/pms/acme', buildRentPayment(), { secret: acme }),
      );
      await new Promise((r) => setTimeout(r, 300));
      // A fourth while three are held: refused at once, before its body is kept.
      const overflow = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment(), { secret: acme });
      expect(overflow.status).toBe(503);
      expect(overflow.headers.get('retry-after')).toBeTruthy();

      // Health tells the truth once its probe of the storage gives up.
      await vi.waitFor(
        async () => {
          const ready = await fetch(`${receiver.url}/readyz`);
          expect(ready.status).toBe(503);
          expect(((await ready.json()) as { checks: { storage: unknown } }).checks.storage).toEqual(
            expect.stringMatching(/PostgreSQL|not answering/),
          );
        },
        { timeout: 5000, interval: 100 },
      );

      const answers = await Promise.all(waiting);
      for (const res of answers) {
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(res.json).toMatchObject({ error: { code: 'service_unavailable' } });
      }
      // Bounded: far less than the stall would have lasted.
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    // Nothing acknowledged is stored after the stall ends (statement_timeout rolled them back).
    await new Promise((r) => setTimeout(r, 500));
    expect(await countRows(database, 'SELECT count(*) AS n FROM outbox')).toBe(0);
    expect((await fetch(`${receiver.url}/readyz`)).status).toBe(200);
    const after = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment(), { secret: acme });
    expect(after.status).toBe(202);
  });
});

describe('HTTP server limits', () => {
  let database: TestDatabase;
  let receiver: TestReceiver;

  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
    receiver = await startReceiver({
      db: database.db,
      databaseUrl: database.url,
      partnerSecrets: [],
      pmsSecrets: { acme: [acme] },
      limits: {
        HTTP_HEADERS_TIMEOUT_MS: 1000,
        HTTP_REQUEST_TIMEOUT_MS: 2000,
        HTTP_KEEP_ALIVE_TIMEOUT_MS: 1000,
        HTTP_MAX_CONNECTIONS: 20,
      },
      metricsToken: 'metrics-token-0123456789',
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await database?.drop();
  });

  /** Opens a socket, sends `head`, then one byte every 200 ms; resolves when the server closes it. */
  function trickle(head: string): Promise<{ ms: number; answer: string }> {
    const { hostname, port } = new URL(receiver.url);
    return new Promise((resolve) => {
      const started = Date.now();
      let answer = '';
      const socket = connect(Number(port), hostname, () => socket.write(head));
      const timer = setInterval(() => socket.write('x'), 200);
      const stopAt = setTimeout(() => socket.destroy(), 30_000);
      socket.on('data', (d) => (answer += d.toString()));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(timer);
        clearTimeout(stopAt);
        resolve({ ms: Date.now() - started, answer });
      });
    });
  }

  it('cuts off a sender that trickles its body once the request time-out passes', async () => {
    const { ms, answer } = await trickle(
      'POST /webhooks/pms/acme HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n',
    );
    expect(ms).toBeLessThan(10_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it('cuts off a sender that trickles its headers', async () => {
    const { ms } = await trickle('POST /webhooks/pms/acme HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    expect(ms).toBeLessThan(10_000);
  });

  it('puts /metrics behind METRICS_TOKEN when one is set', async () => {
    expect((await fetch(`${receiver.url}/metrics`)).status).toBe(401);
    const wrong = await fetch(`${receiver.url}/metrics`, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(403);
    const right = await fetch(`${receiver.url}/metrics`, {
      headers: { authorization: 'Bearer metrics-token-0123456789' },
    });
    expect(right.status).toBe(200);
    expect(await right.text()).toContain('rentbridge_webhooks_total');
  });
});
