import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { rentalPayments } from '../../src/commands/rental-payments.js';
import { requestId } from '../../src/http/request-id.js';
import { createLogger } from '../../src/logger.js';
import type { Overview } from '../../src/ops/overview/overview.js';
import { createOpsRouter, type OpsRouter } from '../../src/ops/ops-router.js';
import { createRelay, type Relay } from '../../src/relay/relay.js';
import type { Trace } from '../../src/trace/trace.js';
import { runCli } from '../support/cli.js';
import { buildDecisionLetter, seedLetter } from '../dead-letters/build-dead-letter.js';
import { createHarness, uid, type Harness } from '../consumers/support/harness.js';
import {
  buildRentPayment,
  buildSecret,
  send,
  startReceiver,
  type TestReceiver,
} from '../receiver/webhooks.js';

const TOKEN = 'overview-ops-token-0123456789';
const secret = buildSecret();

describe('ops overview and trace', () => {
  let h: Harness;
  let receiver: TestReceiver;
  let relay: Relay;
  let router: OpsRouter;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    h = await createHarness();
    await h.startConsumer(rentalPayments);
    receiver = await startReceiver({
      db: h.database.db,
      databaseUrl: h.database.url,
      partnerSecrets: [],
      pmsSecrets: { acme: [secret] },
    });
    relay = startRelay();
    await relay.start();
    const app = express();
    app.use(requestId());
    router = createOpsRouter({
      db: h.database.db,
      producer: h.producer,
      logger: createLogger({ level: 'silent' }),
      opsToken: TOKEN,
      topicPrefix: h.kafka.prefix,
      // Not the defaults (72 h, 120 s): the console must say and judge by what is configured.
      insight: { retentionHours: 48, relayStallSeconds: 20 },
    });
    app.use('/ops', router);
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ops/api`;
  });

  afterAll(async () => {
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    await router?.close();
    await relay?.stop();
    await receiver?.close();
    await h?.close();
  });

  function startRelay(): Relay {
    return createRelay({
      db: h.database.db,
      kafka: h.kafka.kafka,
      logger: createLogger({ level: 'silent' }),
      databaseUrl: h.database.url,
      topicPrefix: h.kafka.prefix,
      retentionHours: 72,
    });
  }

  async function get<T>(path: string, token = TOKEN): Promise<{ status: number; body: T }> {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as T };
  }

  /** A signed PMS webhook for a real sandbox enrollment, followed until its outcome. */
  async function paymentThroughTheFlow(enrollmentStatus = 'active') {
    const [record] = await h.control.addRecords('enrollments', [
      { status: enrollmentStatus, rental_payments: [] },
    ]);
    const body = buildRentPayment({ payment_id: uid('pay'), enrollment_id: Number(record!.id) });
    const res = await send(receiver.url, '/webhooks/pms/acme', body, { secret });
    expect(res.status).toBe(202);
    const [outcome] = await h.outcomesOf(body.data.payment_id as string);
    return {
      paymentId: body.data.payment_id as string,
      webhookId: res.webhookId,
      eventId: String(res.json.event_id),
      outcome,
    };
  }

  describe('when a signed webhook becomes an applied command', () => {
    let flow: Awaited<ReturnType<typeof paymentThroughTheFlow>>;
    beforeAll(async () => {
      flow = await paymentThroughTheFlow();
    });

    it('traces it from the webhook id through outbox, Kafka, the guard and the outcome', async () => {
      const { status, body } = await get<Trace>(`/trace/${flow.webhookId}`);
      expect(status).toBe(200);
      expect(body.found).toBe(true);
      const stages = body.steps.map((s) => s.stage);
      // The relay marks its row published once Kafka answered; the consumer may read its snapshot
      // before that, so those two are compared without order.
      expect(stages.filter((x) => x !== 'published')).toEqual([
        'webhook',
        'outbox',
        'snapshot',
        'command',
        'attempt',
        'outcome',
      ]);
      expect(stages).toContain('published');
      expect(body.steps[0]!.details).toMatchObject({ source: 'pms:acme', webhookId: flow.webhookId });
      const step = (stage: string) => body.steps.find((x) => x.stage === stage)!;
      expect(step('published').what).toMatch(/commands\.rental-payments partition \d+ offset \d+/);
      expect(step('snapshot').details).toMatchObject({
        requestId: `${flow.paymentId}.a0.r1`,
        kind: 'snapshot',
      });
      expect(step('snapshot').what).toMatch(/status active, updated_at /);
      expect(step('attempt').details).toMatchObject({
        requestId: `${flow.paymentId}.a1`,
        status: expect.any(Number),
      });
      expect(step('outcome').what).toMatch(
        /applied; outcome outcome\.\S+\.applied published to outcomes\.rental-payments\[\d+\]@\d+/,
      );
      expect(body.ends.join('\n')).toContain(`command acme rental_payment "${flow.paymentId}" ended applied`);
    });

    it('finds the same trail from the CloudEvent id, the command id and the Partner request id', async () => {
      const fromWebhook = (await get<Trace>(`/trace/${flow.webhookId}`)).body.steps;
      for (const id of [flow.eventId, flow.paymentId, `${flow.paymentId}.a1`]) {
        const { body } = await get<Trace>(`/trace/${encodeURIComponent(id)}`);
        expect(body.steps, id).toEqual(fromWebhook);
      }
    });

    it('counts it in the overview: stored, published, applied; nothing stalled', async () => {
      const { status, body } = await get<Overview>('/overview');
      expect(status).toBe(200);
      const stage = (id: string) => body.stages.find((s) => s.id === id)!;
      expect(body.stages.map((s) => s.id)).toEqual([
        'receiver',
        'outbox',
        'relay',
        'kafka',
        'consumers',
        'partner',
        'poller',
        'dead-letters',
      ]);
      expect(stage('receiver').figures[0]).toEqual({ label: 'stored, last hour', value: 1 });
      expect(stage('relay').status).toBe('moving');
      expect(stage('kafka').figures).toContainEqual({ label: 'commands.rental-payments', value: 1 });
      expect(stage('consumers').figures).toContainEqual({ label: 'applied, last hour', value: 1 });
      const applied = stage('consumers').charts[0]!.series.find((s) => s.name === 'applied')!;
      expect(applied.values.reduce<number>((a, b) => a + (b ?? 0), 0)).toBe(1);
      expect(applied.values).toHaveLength(body.minutes.length);
      expect(body.cost.queries).toBeGreaterThan(0);
    });
  });

  describe('when a write met a 503 after it was applied', () => {
    it('shows every guard step: snapshot, write, wait, read-back with its verdict and why, outcome', async () => {
      const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
      await h.control.addFault({
        method: 'POST',
        path: `/partner/v1/enrollments/${record!.id}/report_rental_payments`,
        kind: 'apply_then_error',
        status: 503,
      });
      const body = buildRentPayment({ payment_id: uid('pay'), enrollment_id: Number(record!.id) });
      const paymentId = body.data.payment_id as string;
      expect((await send(receiver.url, '/webhooks/pms/acme', body, { secret })).status).toBe(202);
      const [outcome] = await h.outcomesOf(paymentId);
      expect(outcome).toMatchObject({ status: 'applied' });

      const trace = await vi.waitFor(async () => {
        const { body: t } = await get<Trace>(`/trace/${encodeURIComponent(paymentId)}`);
        // The outcome's position is noted just after it is sent.
        expect(t.steps.find((x) => x.stage === 'outcome')?.details.kafka).toBeTruthy();
        return t;
      });
      const guard = trace.steps.filter((x) =>
        ['snapshot', 'attempt', 'wait', 'read-back', 'outcome'].includes(x.stage),
      );
      expect(guard.map((x) => x.stage)).toEqual(['snapshot', 'attempt', 'wait', 'read-back', 'outcome']);
      const [snapshot, write, wait, readBack, done] = guard;
      expect(snapshot!.details).toMatchObject({ requestId: `${paymentId}.a0.r1`, result: 'read' });
      expect(write!.details).toMatchObject({ requestId: `${paymentId}.a1`, status: 503 });
      expect(write!.what).toContain('503');
      expect(wait!.what).toMatch(/waited \d+ ms: before an early read-back/);
      expect(readBack!.details).toMatchObject({ requestId: `${paymentId}.a1.r1`, result: 'applied' });
      expect(readBack!.what).toContain('applied: the target state is reached');
      expect(done!.what).toMatch(
        /command applied; outcome outcome\.\S+\.applied published to outcomes\.rental-payments\[\d+\]@\d+/,
      );
      for (const step of guard) expect(step.details.ms ?? 0).toBeGreaterThanOrEqual(0);

      // The published step names where the command is on Kafka: the message is there.
      const published = trace.steps.find((x) => x.stage === 'published')!;
      const onKafka = await h.kafka.readMessages('commands.rental-payments', 200, 5_000);
      const message = onKafka.find((m) => m.headers?.ce_id?.toString() === published.details.eventId);
      expect(message?.offset).toBe(published.details.offset);
    });
  });

  describe('when an id is both a dead-letter id and a Partner record id', () => {
    it('says which kinds it matched, and follows only the one picked', async () => {
      const letter = await seedLetter(
        h.database.db,
        h.kafka.prefix,
        buildDecisionLetter(h.kafka.prefix, { reason: 'rejected' }),
      );
      const id = String(letter);
      await h.database.sql.query(
        `INSERT INTO published_versions (resource, record_id, updated_at, via) VALUES ('customers', $1, '2026-11-01T00:00:00Z', 'poller')`,
        [id],
      );
      const all = (await get<Trace>(`/trace/${id}`)).body;
      expect(all.matchedAs).toEqual(['record', 'dead-letter']);
      // The record's own trail (the sandbox's record ids are small numbers too) and the letter's.
      expect(all.steps.map((s) => s.stage)).toEqual(expect.arrayContaining(['dead-letter', 'version']));
      expect(all.ends[0]).toContain('matched more than one kind of id (record id, dead-letter id)');

      const letterOnly = (await get<Trace>(`/trace/${id}?as=dead-letter`)).body;
      expect(letterOnly.as).toBe('dead-letter');
      expect(letterOnly.steps.map((s) => s.stage)).toEqual(['dead-letter']);
      const recordOnly = (await get<Trace>(`/trace/${id}?as=record`)).body;
      expect(recordOnly.steps.map((s) => s.stage)).toContain('version');
      expect(recordOnly.steps.map((s) => s.stage)).not.toContain('dead-letter');
      expect((await get(`/trace/${id}?as=nonsense`)).status).toBe(400);
    });
  });

  describe('when the outbox row was pruned', () => {
    it('says the trail ends there, and why', async () => {
      const flow = await paymentThroughTheFlow();
      await h.database.sql.query(`DELETE FROM outbox WHERE event_id = $1::uuid`, [flow.eventId]);
      const { body } = await get<Trace>(`/trace/${flow.webhookId}`);
      expect(body.steps[0]!.stage).toBe('webhook');
      expect(body.ends.join('\n')).toMatch(/outbox row \d+ is gone: .*OUTBOX_RETENTION_HOURS \(48 h\)/);
    });
  });

  describe('when an outbox row waits longer than RELAY_STALL_SECONDS', () => {
    it('marks the outbox and the relay as not moving by that bound, as /readyz does', async () => {
      await relay.stop();
      try {
        await h.database.sql.query(
          `INSERT INTO outbox (event_id, topic, key, type, source, data, created_at)
           VALUES (gen_random_uuid(), $1, 'k', 't', '/test', '{}', now() - interval '30 seconds')`,
          [`${h.kafka.prefix}partner.applications`],
        );
        const { body } = await get<Overview>('/overview');
        const relayStage = body.stages.find((s) => s.id === 'relay')!;
        expect(relayStage.status).toBe('stalled');
        expect(relayStage.note).toMatch(/oldest unpublished row waits 3\d s \(> 20 s, RELAY_STALL_SECONDS\)/);
        expect(body.rules.relayStallSeconds).toBe(20);
        expect(body.stages.find((s) => s.id === 'outbox')!.figures[0]).toEqual({
          label: 'backlog (unpublished rows)',
          value: 1,
        });
      } finally {
        await h.database.sql.query(`DELETE FROM outbox WHERE published_at IS NULL`);
        relay = startRelay();
        await relay.start();
      }
    });
  });

  describe('when some roles report in and others do not', () => {
    it('says "not running" for the missing ones, never "idle"', async () => {
      await h.database.sql.query(
        `INSERT INTO role_heartbeats (role, instance, seen_at) VALUES
           ('http', 'a:1', now()), ('relay', 'b:2', now()),
           ('consumer:rental-payments', 'c:3', now()), ('consumer:application-decisions', 'c:3', now()),
           ('poller', 'd:4', now() - interval '5 minutes')`,
      );
      try {
        const { body } = await get<Overview>('/overview');
        const stage = (id: string) => body.stages.find((s) => s.id === id)!;
        // The poller's last report is 5 minutes old; no dead-letter indexer ever reported.
        expect(stage('poller').status).toBe('stopped');
        expect(stage('poller').note).toContain('not running: no poller process has reported for over 30 s');
        expect(stage('dead-letters').status).toBe('stopped');
        expect(stage('relay').status).not.toBe('stopped');
        expect(stage('consumers').status).toBe('attention');
        expect(stage('consumers').note).toContain('not running: customer-registrations, enrollments');
        expect(body.rules.roleGoneSeconds).toBe(30);
      } finally {
        await h.database.sql.query(`DELETE FROM role_heartbeats`);
      }
    });
  });

  describe('when the id is unknown or the token is wrong', () => {
    it('answers found: false with a plain sentence, and 403 without the token', async () => {
      const { body } = await get<Trace>('/trace/nothing-like-this');
      expect(body).toMatchObject({ found: false, steps: [] });
      expect(body.ends[0]).toContain('no trace of "nothing-like-this" in PostgreSQL');
      expect((await get('/overview', 'a-wrong-token-of-some-length')).status).toBe(403);
    });
  });

  describe('rentbridge trace', () => {
    it('prints the timeline as a table, or JSON with --json, and exits 1 for an unknown id', async () => {
      const flow = await paymentThroughTheFlow();
      const env = { DATABASE_URL: h.database.url, KAFKA_TOPIC_PREFIX: h.kafka.prefix, LOG_LEVEL: 'silent' };
      const table = await runCli(['trace', `${flow.paymentId}.a1`], env);
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/time \(UTC\)\s+stage\s+what/);
      expect(table.stdout).toMatch(/published\s+published to Kafka commands\.rental-payments/);
      expect(table.stdout).toContain('where the trail ends:');
      const json = await runCli(['trace', flow.webhookId, '--json'], env);
      expect((JSON.parse(json.stdout) as Trace).steps.map((s) => s.stage)).toContain('outcome');
      const picked = await runCli(['trace', flow.paymentId, '--as', 'command', '--json'], env);
      expect((JSON.parse(picked.stdout) as Trace).as).toBe('command');
      const badKind = await runCli(['trace', flow.paymentId, '--as', 'nonsense'], env);
      expect(badKind.code).toBe(2);
      const unknown = await runCli(['trace', 'nothing-like-this'], env);
      expect(unknown.code).toBe(1);
      expect(unknown.stdout).toContain('no trace of "nothing-like-this"');
    });
  });
});
