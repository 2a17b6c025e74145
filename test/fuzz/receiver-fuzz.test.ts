import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/http/http-app.js';
import { REQUEST_ID_PATTERN } from '../../src/http/request-id.js';
import { createLogger } from '../../src/logger.js';
import { createIngestWriter, type IngestWriter } from '../../src/receiver/ingest-writer.js';
import { createWebhookRouter } from '../../src/receiver/webhook-router.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * Property-based fuzzing of the webhook receiver through HTTP, with the real express app and a
 * real PostgreSQL schema (no relay: what matters is what reaches the outbox). Thousands of
 * malformed, mis-signed, replayed and oddly encoded requests; after every one:
 * - the answer is not a 5xx, and the server still answers;
 * - an error is the JSON envelope, its request_id the X-Request-Id header;
 * - a refused request wrote nothing (outbox and receipts counted before and after).
 */

const MAX_BODY = 64 * 1024;
const TOLERANCE_SECONDS = 300;
const acme = `whsec_${randomBytes(24).toString('base64')}`;
const partner = `whsec_${randomBytes(24).toString('base64')}`;
const stranger = `whsec_${randomBytes(24).toString('base64')}`;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A raw HTTP request: node's client lets us send any bytes and (almost) any header. */
function post(base: URL, path: string, headers: Record<string, string>, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: base.hostname,
        port: base.port,
        path,
        method: 'POST',
        headers: { ...headers, 'content-length': String(body.length) },
        timeout: 20_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          tally.requests += 1;
          if ((res.statusCode ?? 0) >= 500) tally.fiveXx += 1;
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString(),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** Standard Webhooks: the HMAC covers `id.timestamp.` and the body's bytes exactly as sent. */
function sign(secret: string, webhookId: string, timestamp: number, body: Buffer): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${webhookId}.${timestamp}.`).update(body).digest('base64')}`;
}

/** Every request the fuzz sent and every 5xx among the answers (reported at the end). */
const tally = { requests: 0, fiveXx: 0 };

const now = () => Math.floor(Date.now() / 1000);

// ---- arbitraries ------------------------------------------------------------------------------

const validPayment = fc.record({
  payment_id: fc.uuid().map((u) => `pay-${u}`),
  enrollment_id: fc.oneof(fc.stringMatching(/^enr-[a-z0-9]{1,8}$/), fc.nat()),
  amount_cents: fc.integer({ min: 1, max: 10_000_000 }),
  paid_on: fc.constantFrom('2026-11-01', '2026-02-28'),
  period: fc.constantFrom('2026-11', '2026-02'),
});

/** A known envelope whose fields have the wrong type, are missing, or carry hostile strings. */
const wrongTypes = fc.oneof(
  fc.record(
    {
      type: fc.constantFrom('rent_payment.received', 'application.decided'),
      data: fc.record(
        {
          payment_id: fc.anything(),
          decision_id: fc.anything(),
          enrollment_id: fc.anything(),
          application_id: fc.anything(),
          amount_cents: fc.oneof(fc.double(), fc.string(), fc.constant(null), fc.bigInt().map(String)),
          paid_on: fc.oneof(
            fc.string(),
            fc.date().map((d) => d.toString()),
            fc.integer(),
          ),
          decision: fc.oneof(fc.string(), fc.constantFrom('approve', 'decline', 'APPROVE')),
          period: fc.string(),
          extra: fc.anything(),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: [] },
  ),
  fc.record({ type: fc.anything(), data: fc.anything() }, { requiredKeys: [] }),
  fc.anything(),
  // Strings PostgreSQL's jsonb refuses although JSON allows them: NUL and lone surrogates.
  validPayment.chain((p) =>
    fc.constantFrom('\u0000', 'a\u0000b', '\ud800', '\udfff x', 'ok\u0000').chain((bad) =>
      fc.constantFrom<Record<string, unknown>>(
        { type: 'rent_payment.received', data: { ...p, payment_id: bad } },
        { type: 'rent_payment.received', data: { ...p, enrollment_id: bad } },
        {
          type: 'application.decided',
          data: { decision_id: bad, application_id: '1', decision: 'approve' },
        },
        {
          type: 'application.decided',
          data: { decision_id: 'd1', application_id: '1', decision: 'approve', reason: bad },
        },
        { type: `tenant.${bad}`, data: { note: bad } },
        { type: 'tenant.moved_out', data: { [bad]: 1 } },
      ),
    ),
  ),
);

/** Bytes that are not one JSON document. */
const brokenJson = fc.oneof(
  fc.json().map((j) => j.slice(0, Math.max(0, j.length - 1 - (j.length % 3)))),
  fc.string(),
  fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b).toString('latin1')),
  fc.constantFrom(
    '',
    ' ',
    '{',
    '{"type":',
    'null',
    'undefined',
    'NaN',
    '{"a":1}}',
    '[]]',
    '\u0000',
    '{"type":"x"\u0000}',
  ),
  fc.nat({ max: 20_000 }).map((n) => '['.repeat(n + 1)),
  fc.nat({ max: 5000 }).map((n) => `${'{"a":'.repeat(n + 1)}1${'}'.repeat(n + 1)}`),
);

type BodyCase = { label: string; bytes: Buffer; contentType?: string; contentEncoding?: string };

const bodies: fc.Arbitrary<BodyCase> = fc.oneof(
  {
    weight: 3,
    arbitrary: wrongTypes.map((v) => ({
      label: 'wrong types',
      bytes: Buffer.from(JSON.stringify(v) ?? 'null'),
    })),
  },
  { weight: 3, arbitrary: brokenJson.map((s) => ({ label: 'broken JSON', bytes: Buffer.from(s, 'utf8') })) },
  { weight: 1, arbitrary: fc.constant({ label: 'empty', bytes: Buffer.alloc(0) }) },
  {
    weight: 1,
    arbitrary: validPayment.map((p) => ({
      label: 'utf-16',
      bytes: Buffer.from(JSON.stringify({ type: 'rent_payment.received', data: p }), 'utf16le'),
      contentType: 'application/json; charset=utf-16',
    })),
  },
  {
    weight: 1,
    arbitrary: validPayment.map((p) => ({
      label: 'gzip header, plain body',
      bytes: Buffer.from(JSON.stringify({ type: 'rent_payment.received', data: p })),
      contentEncoding: 'gzip',
    })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(brokenJson, fc.constantFrom('gzip', 'deflate', 'br', 'x-unknown', 'gzip, gzip'))
      .map(([s, enc]) => ({
        label: `encoded ${enc}`,
        bytes: enc === 'gzip' ? gzipSync(Buffer.from(s)) : Buffer.from(s),
        contentEncoding: enc,
      })),
  },
  {
    weight: 1,
    arbitrary: fc.uint8Array({ minLength: 1, maxLength: 256 }).map((b) => ({
      label: 'NUL and control bytes',
      bytes: Buffer.concat([
        Buffer.from('{"type":"rent_payment.received","data":'),
        Buffer.from(b),
        Buffer.from([0]),
        Buffer.from('}'),
      ]),
    })),
  },
);

const contentTypes = fc.constantFrom(
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  'application/json; charset=latin1',
  'application/json; charset=nonsense',
  '*/*',
  ';;;',
);

const requestIds = fc.oneof(
  fc.constant(undefined),
  fc.stringMatching(/^[A-Za-z0-9_.-]{1,128}$/),
  fc.string({ maxLength: 300 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
  fc.constantFrom('', ' ', 'a b', 'x'.repeat(129), '../../etc', '<script>'),
);

/** How a request is signed (or not). Only `valid` is a correct signature for the body sent. */
type Signing =
  | { kind: 'none' }
  | { kind: 'valid' }
  | { kind: 'wrong-secret' }
  | { kind: 'stale'; skewSeconds: number }
  | { kind: 'garbage-timestamp'; timestamp: string }
  | { kind: 'garbage-signature'; signature: string }
  | { kind: 'tampered' }
  | { kind: 'partial'; drop: 'webhook-id' | 'webhook-timestamp' | 'webhook-signature' }
  | { kind: 'long-id' };

const signings: fc.Arbitrary<Signing> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<Signing>({ kind: 'valid' }) },
  fc.constant<Signing>({ kind: 'none' }),
  fc.constant<Signing>({ kind: 'wrong-secret' }),
  fc
    .integer({ min: TOLERANCE_SECONDS + 5, max: 10 ** 9 })
    .chain((s) => fc.constantFrom(s, -s))
    .map((skewSeconds) => ({ kind: 'stale' as const, skewSeconds })),
  fc
    .oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom('-1', '1e9', '0x10', '99999999999999999999', ' 1', ''),
    )
    .map((t) => ({ kind: 'garbage-timestamp' as const, timestamp: t.replace(/[^\x20-\x7e]/g, '') })),
  fc
    .oneof(
      fc.string({ maxLength: 200 }),
      fc.base64String({ maxLength: 88 }).map((b) => `v1,${b}`),
      fc.constantFrom('v1,', 'v2,abc', 'v1a,xyz', 'v1,' + 'A'.repeat(10_000), ' '.repeat(50)),
    )
    .map((s) => ({ kind: 'garbage-signature' as const, signature: s.replace(/[^\x20-\x7e]/g, '') })),
  fc.constant<Signing>({ kind: 'tampered' }),
  fc
    .constantFrom('webhook-id', 'webhook-timestamp', 'webhook-signature')
    .map((drop) => ({ kind: 'partial' as const, drop })),
  fc.constant<Signing>({ kind: 'long-id' }),
);

const paths = fc.oneof(
  { weight: 5, arbitrary: fc.constant('/webhooks/pms/acme') },
  { weight: 2, arbitrary: fc.constant('/webhooks/partner') },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.string({ minLength: 1, maxLength: 30 }),
        fc.constantFrom('ACME', 'acme%00', '..%2facme', 'acme ', '%e2%82'),
      )
      .map((s) => `/webhooks/pms/${encodeURIComponent(s)}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('/webhooks/pms/', '/webhooks/pms', '/webhooks/pms/acme/extra', '/webhooks'),
  },
);

const oddHeaders = fc.dictionary(
  fc.constantFrom(
    'x-forwarded-for',
    'accept',
    'accept-encoding',
    'user-agent',
    'x-custom',
    'cookie',
    'accept-charset',
  ),
  fc.string({ maxLength: 100 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
  { maxKeys: 4 },
);

// ---- the receiver under test -------------------------------------------------------------------

describe('webhook receiver fuzzing', () => {
  let database: TestDatabase;
  let writer: IngestWriter;
  let server: Server;
  let base: URL;
  const accepted: Array<{ path: string; headers: Record<string, string>; body: Buffer }> = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const logger = createLogger({ level: 'silent' });
    writer = createIngestWriter({ db: database.db, databaseUrl: database.url, logger });
    const app = createHttpApp({
      logger,
      mounts: [
        {
          path: '/webhooks',
          router: createWebhookRouter({
            logger,
            writer,
            config: {
              PARTNER_WEBHOOK_SECRETS: [partner],
              PMS_WEBHOOK_SECRETS: { acme: [acme] },
              WEBHOOK_MAX_BODY_BYTES: MAX_BODY,
              WEBHOOK_TOLERANCE_SECONDS: TOLERANCE_SECONDS,
            },
          }),
        },
      ],
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });

  afterAll(async () => {
    console.log(`receiver fuzz: ${tally.requests} requests, ${tally.fiveXx} answered 5xx`);
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await writer?.close();
    await database?.drop();
  });

  async function rowCounts(): Promise<{ outbox: number; receipts: number }> {
    const { rows } = await database.sql.query<{ outbox: string; receipts: string }>(
      'SELECT (SELECT count(*) FROM outbox) AS outbox, (SELECT count(*) FROM webhook_receipts) AS receipts',
    );
    return { outbox: Number(rows[0]?.outbox), receipts: Number(rows[0]?.receipts) };
  }

  /** Sends one request and checks every property that holds for any request. */
  async function sendAndCheck(
    path: string,
    headers: Record<string, string>,
    body: Buffer,
    expectation: { mayBeAccepted: boolean },
  ): Promise<Answer> {
    const before = await rowCounts();
    const answer = await post(base, path, headers, body);
    const after = await rowCounts();
    const context = `${answer.status} ${path} ${JSON.stringify(headers).slice(0, 400)} body=${body.toString('utf8').slice(0, 200)} answer=${answer.text.slice(0, 300)}`;

    expect(answer.status, context).toBeLessThan(500);
    const requestId = answer.headers['x-request-id'];
    expect(typeof requestId, context).toBe('string');
    expect(requestId as string).toMatch(REQUEST_ID_PATTERN);
    const sentId = headers['x-request-id'];
    if (sentId !== undefined && REQUEST_ID_PATTERN.test(sentId)) expect(requestId, context).toBe(sentId);

    if (answer.status >= 400) {
      const json = JSON.parse(answer.text) as { error?: Record<string, unknown> };
      expect(json.error, context).toMatchObject({
        status: answer.status,
        code: expect.any(String),
        message: expect.any(String),
        request_id: requestId,
      });
      expect(after, `nothing written for a refused request: ${context}`).toEqual(before);
    } else {
      expect(expectation.mayBeAccepted, `accepted although not validly signed: ${context}`).toBe(true);
      expect(answer.status, context).toBeGreaterThanOrEqual(200);
      expect(answer.status, context).toBeLessThan(300);
      // One webhook, at most one event; a duplicate writes nothing.
      expect(after.outbox - before.outbox, context).toBeLessThanOrEqual(1);
      if ((JSON.parse(answer.text) as { duplicate?: boolean }).duplicate)
        expect(after, context).toEqual(before);
    }
    return answer;
  }

  async function stillAnswers(): Promise<void> {
    const res = await fetch(new URL('/healthz', base));
    expect(res.status).toBe(200);
  }

  function buildHeaders(
    path: string,
    body: BodyCase,
    signing: Signing,
    extra: { contentType?: string; requestId?: string; odd: Record<string, string> },
  ): { headers: Record<string, string>; bytes: Buffer; validlySigned: boolean } {
    const secret = path === '/webhooks/partner' ? partner : acme;
    const headers: Record<string, string> = { ...extra.odd };
    const contentType = body.contentType ?? extra.contentType;
    if (contentType !== undefined) headers['content-type'] = contentType;
    if (body.contentEncoding) headers['content-encoding'] = body.contentEncoding;
    if (extra.requestId !== undefined) headers['x-request-id'] = extra.requestId;
    let bytes = body.bytes;
    const webhookId = signing.kind === 'long-id' ? `msg_${'x'.repeat(300)}` : `msg_${randomUUID()}`;
    const ts = now();
    const set = (id: string, timestamp: string, signature: string) => {
      headers['webhook-id'] = id;
      headers['webhook-timestamp'] = timestamp;
      headers['webhook-signature'] = signature;
    };
    switch (signing.kind) {
      case 'none':
        break;
      case 'valid':
      case 'long-id':
        set(webhookId, String(ts), sign(secret, webhookId, ts, bytes));
        break;
      case 'wrong-secret':
        set(webhookId, String(ts), sign(stranger, webhookId, ts, bytes));
        break;
      case 'stale': {
        const t = ts - signing.skewSeconds;
        set(webhookId, String(t), sign(secret, webhookId, Math.max(0, t), bytes));
        break;
      }
      case 'garbage-timestamp':
        set(webhookId, signing.timestamp, sign(secret, webhookId, ts, bytes));
        break;
      case 'garbage-signature':
        set(webhookId, String(ts), signing.signature);
        break;
      case 'tampered':
        set(webhookId, String(ts), sign(secret, webhookId, ts, bytes));
        bytes = Buffer.concat([bytes, Buffer.from(' ')]);
        break;
      case 'partial':
        set(webhookId, String(ts), sign(secret, webhookId, ts, bytes));
        delete headers[signing.drop];
        break;
    }
    // A body that was signed as text but sent encoded is still the signed bytes on the wire.
    const knownSource = path === '/webhooks/partner' || path === '/webhooks/pms/acme';
    return { headers, bytes, validlySigned: knownSource && signing.kind === 'valid' };
  }

  describe('when requests are malformed, mis-signed or oddly encoded', () => {
    it('never answers 5xx, always answers in the envelope, and writes nothing it refuses', async () => {
      await fc.assert(
        fc.asyncProperty(
          paths,
          bodies,
          signings,
          contentTypes,
          requestIds,
          oddHeaders,
          async (path, body, signing, contentType, requestId, odd) => {
            const built = buildHeaders(path, body, signing, { contentType, requestId, odd });
            const answer = await sendAndCheck(path, built.headers, built.bytes, {
              mayBeAccepted: built.validlySigned,
            });
            if (answer.status >= 200 && answer.status < 300) {
              accepted.push({ path, headers: built.headers, body: built.bytes });
            }
          },
        ),
        { numRuns: 2500, interruptAfterTimeLimit: 35_000 },
      );
      await stillAnswers();
    });
  });

  describe('when bodies are larger than the limit', () => {
    it('answers 413 in the envelope and writes nothing, signed or not', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: MAX_BODY + 1, max: MAX_BODY * 16 }),
          fc.boolean(),
          fc.constantFrom('/webhooks/pms/acme', '/webhooks/partner', '/webhooks/pms/nobody'),
          async (size, signed, path) => {
            const bytes = Buffer.from(`{"type":"rent_payment.received","data":"${'x'.repeat(size)}"}`);
            const { headers } = buildHeaders(
              path,
              { label: 'huge', bytes },
              signed ? { kind: 'valid' } : { kind: 'none' },
              { contentType: 'application/json', odd: {} },
            );
            const answer = await sendAndCheck(path, headers, bytes, { mayBeAccepted: false });
            expect(answer.status).toBe(413);
          },
        ),
        { numRuns: 40 },
      );
      await stillAnswers();
    });
  });

  describe('when accepted webhooks are replayed', () => {
    it('answers 200 duplicate with the same webhook-id, 401 when the signature no longer matches, and writes nothing', async () => {
      // Some validly signed, well-formed deliveries to replay, whatever the first property kept.
      await fc.assert(
        fc.asyncProperty(validPayment, async (payment) => {
          const bytes = Buffer.from(JSON.stringify({ type: 'rent_payment.received', data: payment }));
          const { headers } = buildHeaders(
            '/webhooks/pms/acme',
            { label: 'valid', bytes },
            { kind: 'valid' },
            { odd: {} },
          );
          const answer = await sendAndCheck('/webhooks/pms/acme', headers, bytes, { mayBeAccepted: true });
          expect(answer.status).toBe(202);
          accepted.push({ path: '/webhooks/pms/acme', headers, body: bytes });
        }),
        { numRuns: 30 },
      );
      expect(accepted.length).toBeGreaterThan(0);

      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...accepted),
          fc.constantFrom('same', 'other-body', 'resigned-other-body'),
          async (original, variant) => {
            const headers = { ...original.headers };
            let bytes = original.body;
            if (variant !== 'same') {
              // Valid on its own: only the webhook-id makes it a replay.
              const other = {
                payment_id: `pay-${randomUUID()}`,
                enrollment_id: 'enr-1',
                amount_cents: 1,
                paid_on: '2026-11-01',
              };
              bytes = Buffer.from(JSON.stringify({ type: 'rent_payment.received', data: other }));
            }
            if (variant === 'resigned-other-body') {
              const secret = original.path === '/webhooks/partner' ? partner : acme;
              const ts = now();
              headers['webhook-timestamp'] = String(ts);
              headers['webhook-signature'] = sign(secret, headers['webhook-id']!, ts, bytes);
            }
            const answer = await sendAndCheck(original.path, headers, bytes, {
              mayBeAccepted: variant !== 'other-body',
            });
            if (variant === 'other-body') {
              expect(answer.status).toBe(401);
            } else {
              expect(answer.status).toBe(200);
              expect(JSON.parse(answer.text)).toMatchObject({ duplicate: true });
            }
          },
        ),
        { numRuns: 300 },
      );
      await stillAnswers();
    });
  });

  // The shrunk counterexamples the properties above found first, kept as plain cases.
  describe('when the content-encoding header names a compression the body does not have', () => {
    it.each(['gzip', 'deflate', 'br'])('answers 4xx in the envelope for %s', async (encoding) => {
      const bytes = Buffer.from(JSON.stringify({ type: 'rent_payment.received', data: {} }));
      const { headers } = buildHeaders(
        '/webhooks/pms/acme',
        { label: 'plain', bytes, contentEncoding: encoding },
        { kind: 'valid' },
        { contentType: 'application/json', odd: {} },
      );
      const answer = await sendAndCheck('/webhooks/pms/acme', headers, bytes, { mayBeAccepted: false });
      expect(answer.status).toBeGreaterThanOrEqual(400);
    });
  });

  describe('when a validly signed command carries text PostgreSQL cannot store (NUL, lone surrogate)', () => {
    it.each(['\u0000', 'a\u0000b', '\ud800', '\udfff'])(
      'answers 4xx and writes nothing for %j',
      async (bad) => {
        const bytes = Buffer.from(
          JSON.stringify({
            type: 'rent_payment.received',
            data: { payment_id: bad, enrollment_id: 'enr-1', amount_cents: 100, paid_on: '2026-11-01' },
          }),
        );
        const { headers } = buildHeaders(
          '/webhooks/pms/acme',
          { label: 'bad text', bytes },
          { kind: 'valid' },
          { odd: {} },
        );
        const answer = await sendAndCheck('/webhooks/pms/acme', headers, bytes, { mayBeAccepted: false });
        expect(answer.status).toBeGreaterThanOrEqual(400);
      },
    );
  });

  describe('when a client goes away in the middle of a body', () => {
    it('keeps answering the next requests and writes nothing', async () => {
      const before = await rowCounts();
      for (let i = 0; i < 50; i++) {
        await new Promise<void>((resolve) => {
          const req = request({
            host: base.hostname,
            port: base.port,
            path: '/webhooks/pms/acme',
            method: 'POST',
            headers: { 'content-type': 'application/json', 'content-length': '100000' },
          });
          req.on('error', () => resolve());
          req.write('{"type":"rent_payment.received","data":{');
          setTimeout(() => {
            req.destroy();
            resolve();
          }, 5);
        });
      }
      await stillAnswers();
      expect(await rowCounts()).toEqual(before);
    });
  });

  // ---- issue 14: odd paths, long ids, near-limit bodies, bursts --------------------------------

  describe('when paths carry broken percent-encoding or dot segments', () => {
    const segments = fc.oneof(
      fc.constantFrom(
        '%',
        '%E0%A4%A',
        '%zz',
        '%%',
        '%2e%2e',
        '..',
        '.',
        '%00',
        '%ff',
        '%C0%AE',
        'acm%65',
        '%',
        '%e2%82',
      ),
      fc.stringMatching(/^[%A-Za-z0-9._~-]{1,40}$/),
    );
    it('answers 4xx in the envelope (never 5xx) unless the segment decodes to a known source', async () => {
      await fc.assert(
        fc.asyncProperty(
          segments,
          fc.constantFrom('/webhooks/pms/', '/webhooks/'),
          validPayment,
          async (seg, prefix, p) => {
            const path = `${prefix}${seg}`;
            let decoded: string | null = null;
            try {
              decoded = decodeURIComponent(seg);
            } catch {
              /* broken encoding */
            }
            const bytes = Buffer.from(JSON.stringify({ type: 'rent_payment.received', data: p }));
            const { headers } = buildHeaders(
              '/webhooks/pms/acme',
              { label: 'odd path', bytes },
              { kind: 'valid' },
              {
                contentType: 'application/json',
                odd: {},
              },
            );
            const known = prefix === '/webhooks/pms/' && decoded === 'acme';
            const answer = await sendAndCheck(path, headers, bytes, { mayBeAccepted: known });
            if (!known) expect(answer.status).toBeGreaterThanOrEqual(400);
          },
        ),
        { numRuns: 300 },
      );
      await stillAnswers();
    });
  });

  describe('when ids are long, dot segments or hold other characters', () => {
    const badIds = fc.oneof(
      fc.integer({ min: 129, max: 4000 }).map((n) => 'i'.repeat(n)),
      fc.constantFrom('.', '..', '', 'a/b', '../x', 'a b', 'a?b', 'a#b', '%2e%2e', 'é', 'a\\b'),
      fc.string({ minLength: 1, maxLength: 20 }).filter((v) => !/^[A-Za-z0-9_.-]+$/.test(v)),
    );
    // A PMS's own ids (payment_id, decision_id) are any text of 1-255 characters without control
    // characters (issue 27): only those break that rule.
    const badPmsIds = fc.oneof(
      fc.integer({ min: 256, max: 4000 }).map((n) => 'i'.repeat(n)),
      fc.constantFrom('', '\u0007', 'a\nb', 'tab\there', 'c1\u0085', '\u007f'),
      fc
        .tuple(fc.string({ maxLength: 10 }), fc.integer({ min: 0, max: 0x1f }), fc.string({ maxLength: 10 }))
        .map(([a, c, b]) => `${a}${String.fromCharCode(c)}${b}`),
    );
    it('answers 422 for each id field of each command and for partner records, and writes nothing', async () => {
      await fc.assert(
        fc.asyncProperty(
          validPayment,
          badIds,
          badPmsIds,
          fc.constantFrom(
            'payment_id',
            'enrollment_id',
            'decision_id',
            'application_id',
            'partner_id',
            'partner_updated_at',
          ),
          async (p, badPathId, badPmsId, field) => {
            const bad = field === 'payment_id' || field === 'decision_id' ? badPmsId : badPathId;
            let body: Record<string, unknown>;
            let path = '/webhooks/pms/acme';
            if (field === 'payment_id' || field === 'enrollment_id') {
              body = { type: 'rent_payment.received', data: { ...p, [field]: bad } };
            } else if (field === 'decision_id' || field === 'application_id') {
              body = {
                type: 'application.decided',
                data: { decision_id: 'd-1', application_id: 'a-1', decision: 'approve', [field]: bad },
              };
            } else {
              path = '/webhooks/partner';
              body = {
                type: 'application.updated',
                data:
                  field === 'partner_id'
                    ? { id: bad, updated_at: '2026-11-01T00:00:00Z' }
                    : { id: 'app-1', updated_at: bad.length > 64 ? bad : `${bad}${'9'.repeat(70)}` },
              };
            }
            const bytes = Buffer.from(JSON.stringify(body));
            const { headers } = buildHeaders(
              path,
              { label: 'bad id', bytes },
              { kind: 'valid' },
              { odd: {} },
            );
            const answer = await sendAndCheck(path, headers, bytes, { mayBeAccepted: false });
            expect(answer.status, answer.text).toBe(422);
          },
        ),
        { numRuns: 300 },
      );
    });
  });

  /** A validly signed unknown-type webhook of exactly `size` bytes. */
  function sized(size: number, n: number): Buffer {
    const head = `{"type":"bulk.snapshot","data":{"n":${n},"b":"`;
    const tail = '"}}';
    return Buffer.from(`${head}${'x'.repeat(Math.max(0, size - head.length - tail.length))}${tail}`);
  }

  describe('when bodies are at or just under the limit', () => {
    it('accepts them (202), signed over their bytes', async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: MAX_BODY - 512, max: MAX_BODY }), async (size) => {
          const bytes = sized(size, size);
          const { headers } = buildHeaders(
            '/webhooks/pms/acme',
            { label: 'near limit', bytes },
            { kind: 'valid' },
            {
              contentType: 'application/json',
              odd: {},
            },
          );
          const answer = await sendAndCheck('/webhooks/pms/acme', headers, bytes, { mayBeAccepted: true });
          expect(answer.status).toBe(202);
        }),
        { numRuns: 40 },
      );
    });
  });

  describe('when a burst of near-limit webhooks arrives at once', () => {
    it('accepts every one, answers no 5xx, and stores each once', async () => {
      const before = await rowCounts();
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) => {
          const bytes = sized(MAX_BODY - 64, i);
          const { headers } = buildHeaders(
            '/webhooks/pms/acme',
            { label: 'burst', bytes },
            { kind: 'valid' },
            {
              contentType: 'application/json',
              odd: {},
            },
          );
          return post(base, '/webhooks/pms/acme', headers, bytes);
        }),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(60).fill(202));
      const after = await rowCounts();
      expect(after.outbox - before.outbox).toBe(60);
      await stillAnswers();
    });
  });
});
