import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TOPICS } from '../../src/kafka/topics.js';
import { createSandboxControl, startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';
import { ROOT } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { freePort } from '../support/free-port.js';
import { buildRentPayment, buildSecret, send } from '../receiver/webhooks.js';

/** One span as the OTLP/HTTP JSON exporter sends it. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
  role: string;
}

/** A small OTLP/HTTP receiver: collects every span posted to /v1/traces (JSON encoding). */
async function startCollector(): Promise<{ url: string; spans: OtlpSpan[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const parsed = JSON.parse(body) as {
          resourceSpans: Array<{
            resource: { attributes: OtlpSpan['attributes'] };
            scopeSpans: Array<{ spans: Omit<OtlpSpan, 'role'>[] }>;
          }>;
        };
        for (const rs of parsed.resourceSpans) {
          const role =
            rs.resource.attributes?.find((a) => a.key === 'rentbridge.role')?.value.stringValue ?? '?';
          for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, role });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const attr = (s: OtlpSpan, key: string) => s.attributes?.find((a) => a.key === key)?.value.stringValue;

describe('OpenTelemetry across processes', () => {
  let database: TestDatabase;
  let kafka: TestKafka;
  let sandbox: Sandbox;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  const children: ChildProcess[] = [];
  const secret = buildSecret();
  let httpPort = 0;

  function rentbridge(args: string[]): ChildProcess {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        KAFKA_TOPIC_PREFIX: kafka.prefix,
        PARTNER_API_URL: sandbox.url,
        PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [secret] }),
        // Every role serves its own /metrics and health: the receiver's port is the one driven.
        HTTP_PORT: args[0] === 'receiver' ? String(httpPort) : '0',
        LOG_LEVEL: 'warn',
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(child);
    return child;
  }

  beforeAll(async () => {
    httpPort = await freePort();
    database = await createTestDatabase();
    kafka = createTestKafka();
    await kafka.createTopics([
      TOPICS.rentalPayments,
      TOPICS.rentalPaymentOutcomes,
      TOPICS.dlq(TOPICS.rentalPayments),
      TOPICS.partner('applications'),
    ]);
    sandbox = await startSandbox({ port: 0 });
    collector = await startCollector();
    rentbridge(['receiver']);
    rentbridge(['relay']);
    rentbridge(['consumer', 'rental-payments']);
    // The receiver answers once it listens.
    await vi.waitFor(
      async () => {
        const ok = await fetch(`http://127.0.0.1:${httpPort}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
        if (!ok) throw new Error('the receiver did not start');
      },
      { timeout: 60_000, interval: 500 },
    );
  }, 90_000);

  afterAll(async () => {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null) return resolve();
            const t = setTimeout(() => c.kill('SIGKILL'), 10_000);
            c.once('exit', () => (clearTimeout(t), resolve()));
          }),
      ),
    );
    await collector?.close();
    await sandbox?.close();
    await kafka?.close();
    await database?.drop();
  });

  describe('when one signed webhook becomes a command', () => {
    it('yields one trace: webhook → outbox publish → command → Partner API calls → outcome, over three processes', async () => {
      const control = createSandboxControl(sandbox.url);
      const [record] = await control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
      const body = buildRentPayment({ enrollment_id: Number(record!.id) });
      const paymentId = body.data.payment_id as string;
      const res = await send(`http://127.0.0.1:${httpPort}`, '/webhooks/pms/acme', body, { secret });
      expect(res.status).toBe(202);

      // Each process exports its spans on its own schedule (a batch every 500 ms), so the
      // consumer's may arrive before the receiver's or the relay's: wait until every hop is in.
      const hops = () => {
        const outcome = collector.spans.find(
          (s) => s.name === 'outcome publish' && attr(s, 'rentbridge.command.id') === paymentId,
        );
        const webhook = collector.spans.find(
          (s) => s.name === 'webhook receive' && attr(s, 'rentbridge.webhook.id') === res.webhookId,
        );
        const trace = webhook ? collector.spans.filter((s) => s.traceId === webhook.traceId) : [];
        return {
          trace,
          outcome,
          webhook,
          publish: trace.find((s) => s.name === 'outbox publish'),
          command: trace.find((s) => s.name === 'command rental-payments'),
          write: trace.find((s) => attr(s, 'http.request.header.x-request-id') === `${paymentId}.a1`),
        };
      };
      await expect
        .poll(
          () =>
            Object.entries(hops())
              .filter(([, span]) => !span)
              .map(([hop]) => hop),
          { timeout: 90_000, interval: 500 },
        )
        .toEqual([]);
      if (process.env.TEST_SHOW_SPANS)
        console.log(
          collector.spans.map(
            (x) => `${x.role} ${x.name} ${x.traceId} ${x.spanId} <- ${x.parentSpanId ?? ''}`,
          ),
        );
      const { trace, outcome, webhook, publish, command, write } = hops() as {
        [K in keyof ReturnType<typeof hops>]-?: NonNullable<ReturnType<typeof hops>[K]>;
      };
      const byId = new Map(trace.map((s) => [s.spanId, s]));

      // One trace, every hop, each the child of the one before, across three processes.
      expect(outcome.traceId).toBe(webhook.traceId);
      // The outcome's span names its command by identity (issue 35: two commands may share an id).
      expect([attr(outcome, 'rentbridge.command.source'), attr(outcome, 'rentbridge.command.type')]).toEqual([
        'acme',
        'rental_payment',
      ]);
      expect(publish.parentSpanId).toBe(webhook.spanId);
      expect(command.parentSpanId).toBe(publish.spanId);
      expect(write.name).toMatch(/^partner POST .*report_rental_payments/);
      const ancestors = (span: OtlpSpan): string[] => {
        const up = span.parentSpanId ? byId.get(span.parentSpanId) : undefined;
        return up ? [up.name, ...ancestors(up)] : [];
      };
      expect(ancestors(write)).toContain('command rental-payments');
      expect(ancestors(write).at(-1)).toBe('webhook receive');
      expect(outcome.parentSpanId).toBe(command.spanId);
      // Every span of the trace: what a tracing back-end shows.
      expect(trace.map((s) => `${s.role}: ${s.name}`).sort()).toEqual(
        expect.arrayContaining([
          'receiver: webhook receive',
          'relay: outbox publish',
          'consumer: command rental-payments',
          'consumer: outcome publish',
        ]),
      );
      expect(new Set([webhook.role, publish.role, command.role])).toEqual(
        new Set(['receiver', 'relay', 'consumer']),
      );

      // The outcome message carries the trace context too, as a Kafka header and as the CloudEvents
      // distributed-tracing extension: a back-office consuming it continues the same trace.
      const outcomes = await kafka.readMessages(TOPICS.rentalPaymentOutcomes, 50, 5_000);
      const message = outcomes.find((m) => m.headers?.['command-id']?.toString() === paymentId);
      expect(message, 'the outcome message').toBeDefined();
      const traceparent = message!.headers?.traceparent?.toString();
      expect(traceparent).toBe(`00-${webhook.traceId}-${outcome.spanId}-01`);
      expect(JSON.parse(message!.value!.toString())).toMatchObject({ traceparent });
    });
  });

  describe('when a command is dead-lettered', () => {
    it('indexes the dead letter in the trace of the webhook it came from', async () => {
      rentbridge(['consumer', 'dead-letters']);
      const control = createSandboxControl(sandbox.url);
      const [record] = await control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
      // 402: the card is declined, so the command is rejected and dead-lettered.
      const body = buildRentPayment({ enrollment_id: Number(record!.id), amount_cents: 402 });
      const res = await send(`http://127.0.0.1:${httpPort}`, '/webhooks/pms/acme', body, { secret });
      expect(res.status).toBe(202);

      const findWebhook = () =>
        collector.spans.find(
          (s) => s.name === 'webhook receive' && attr(s, 'rentbridge.webhook.id') === res.webhookId,
        );
      await expect.poll(findWebhook, { timeout: 30_000, interval: 500 }).toBeDefined();
      const webhook = findWebhook()!;
      const findIndexed = () =>
        collector.spans.find((s) => s.name === 'dead letter index' && s.traceId === webhook.traceId);
      await expect.poll(findIndexed, { timeout: 90_000, interval: 500 }).toBeDefined();
      const indexed = findIndexed()!;

      // The letter keeps its command's context: indexed as a child of the command's publish.
      const publish = collector.spans.find(
        (s) => s.name === 'outbox publish' && s.traceId === webhook.traceId,
      );
      expect(indexed.parentSpanId).toBe(publish?.spanId);
      expect(attr(indexed, 'messaging.destination.name')).toBe(
        `${kafka.prefix}${TOPICS.dlq(TOPICS.rentalPayments)}`,
      );
    });
  });

  describe('when the poller finds a change', () => {
    it('yields one trace per pass: its Partner API list calls and the publish of each change it found', async () => {
      const control = createSandboxControl(sandbox.url);
      await control.addRecords('applications', [{ status: 'submitted' }]);
      rentbridge(['poller']);

      const findPass = () =>
        collector.spans.find((s) => s.name === 'poll applications' && s.role === 'poller');
      await expect.poll(findPass, { timeout: 90_000, interval: 500 }).toBeDefined();
      const pass = findPass()!;
      const findPublish = () =>
        collector.spans.find(
          (s) =>
            s.name === 'outbox publish' &&
            s.traceId === pass.traceId &&
            attr(s, 'messaging.destination.name') === TOPICS.partner('applications'),
        );
      await expect.poll(findPublish, { timeout: 60_000, interval: 500 }).toBeDefined();
      const publish = findPublish()!;

      // The pass is the root; the list call and the change's publish (in the relay) its children.
      expect(pass.parentSpanId ?? '').toBe('');
      const lists = collector.spans.filter(
        (s) => s.parentSpanId === pass.spanId && s.name.startsWith('partner GET'),
      );
      expect(lists.map((s) => s.name)).toEqual(
        expect.arrayContaining([expect.stringMatching(/applications/)]),
      );
      expect(publish.parentSpanId).toBe(pass.spanId);
      expect(publish.role).toBe('relay');
    });
  });
});
