import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallbacks, type Callbacks } from '../../src/callbacks/callbacks.js';
import { redeliverCallbacks } from '../../src/callbacks/callback-ops.js';
import { createCallbackOpsRouter } from '../../src/callbacks/callback-ops-router.js';
import { createHttpApp } from '../../src/http/http-app.js';
import { enableEndpoint } from '../../src/callbacks/callback-repository.js';
import { loadConfig } from '../../src/config/config.js';
import { cloudEventHeaders, toCloudEvent } from '../../src/contracts/cloudevent.js';
import { commandOutcomeSchema, OUTCOME_TYPES, type CommandOutcome } from '../../src/contracts/outcomes.js';
import { OUTCOME_TOPICS } from '../../src/kafka/topics.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createLogger } from '../../src/logger.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import { freePort } from '../support/free-port.js';
import type { TestKafka } from '../support/kafka.js';
import { buildSecret } from '../receiver/webhooks.js';
import { startReceiver, until, type Behaviour } from './callback-receiver.js';

const logger = createLogger({ level: 'silent' });

function buildOutcome(overrides: Partial<CommandOutcome> = {}): CommandOutcome {
  return commandOutcomeSchema.parse({
    command_id: `pay-${randomUUID()}`,
    command_source: 'ok',
    command_type: 'rental_payment',
    target_id: `enr-${randomUUID().slice(0, 8)}`,
    status: 'applied',
    attempts: 1,
    partner_request_ids: ['pay-1.a1'],
    ...overrides,
  });
}

/** An outcome message as the command consumers publish it (src/command-types/command-runner.ts). */
function outcomeMessage(outcome: CommandOutcome, id = `outcome.${randomUUID()}`) {
  const event = {
    ...toCloudEvent({
      id,
      source: 'rentbridge/consumers/rental-payments',
      type: OUTCOME_TYPES[outcome.command_type]!,
      subject: outcome.target_id,
      data: outcome,
    }),
    commandsource: outcome.command_source,
    commandtype: outcome.command_type,
  };
  return {
    id,
    value: JSON.stringify(event),
    message: {
      key: outcome.target_id,
      value: JSON.stringify(event),
      headers: {
        ...cloudEventHeaders(event),
        'command-id': outcome.command_id,
        'command-source': outcome.command_source,
        'command-type': outcome.command_type,
      },
    },
  };
}

describe('outcome callbacks', () => {
  const app = useApp({ topics: [...OUTCOME_TOPICS], producer: true });
  let database: TestDatabase;
  let kafka: TestKafka;
  let producer: Producer;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let callbacks: Callbacks;
  let releaseSlow: () => void = () => undefined;
  const slowHeld = new Promise<void>((resolve) => (releaseSlow = resolve));
  const secrets = {
    ok: [buildSecret(), buildSecret()],
    flaky: [buildSecret()],
    gone: [buildSecret()],
    sluggish: [buildSecret()],
    slow: [buildSecret()],
    refused: [buildSecret()],
  };
  let goneAnswers = 410;
  const behaviours: Record<string, Behaviour> = {
    ok: () => ({ status: 204 }),
    flaky: (n) => ({ status: n === 0 ? 500 : 200 }),
    gone: () => ({ status: goneAnswers }),
    // Past its 300 ms time-out the first time, at once after.
    sluggish: (n) => ({ status: 200, delayMs: n === 0 ? 1500 : 0 }),
    // Holds every request until the test lets go (its time-out is long): a stuck endpoint.
    slow: () => ({ status: 200, hold: slowHeld }),
  };
  let refusedPort: number;

  async function publish(outcome: CommandOutcome, id?: string) {
    const built = outcomeMessage(outcome, id);
    await producer.send({
      topic: `${kafka.prefix}${TOPICS.rentalPaymentOutcomes}`,
      messages: [built.message],
    });
    return built;
  }

  const sql = async <T>(text: string, params: unknown[] = []) =>
    (await database.sql.query(text, params)).rows as T[];
  const deliveryOf = async (source: string, eventId: string) =>
    (
      await sql<{ id: string; state: string; attempts: number; webhook_id: string }>(
        'SELECT id::text, state, attempts, webhook_id FROM callback_deliveries WHERE source = $1 AND event_id = $2',
        [source, eventId],
      )
    )[0];
  const attemptsOf = (deliveryId: string) =>
    sql<{ result: string; http_status: number | null }>(
      'SELECT result, http_status FROM callback_attempts WHERE delivery_id = $1 ORDER BY id',
      [deliveryId],
    );
  const receivedFor = (source: string, webhookId: string) =>
    receiver.received.filter((r) => r.source === source && r.headers['webhook-id'] === webhookId);

  beforeAll(async () => {
    ({ database, kafka, producer } = app);
    receiver = await startReceiver(behaviours, secrets);
    refusedPort = await freePort();
    const endpoint = (source: keyof typeof secrets, extra: object = {}) => ({
      url: source === 'refused' ? `http://127.0.0.1:${refusedPort}/refused` : receiver.url(source),
      secrets: secrets[source],
      ...extra,
    });
    const config = loadConfig({
      DATABASE_URL: database.url,
      KAFKA_TOPIC_PREFIX: kafka.prefix,
      PMS_CALLBACKS: JSON.stringify({
        ok: endpoint('ok'),
        flaky: endpoint('flaky'),
        gone: endpoint('gone'),
        sluggish: endpoint('sluggish', { timeout_ms: 300 }),
        slow: endpoint('slow', { timeout_ms: 60_000 }),
        refused: endpoint('refused'),
      }),
      CALLBACK_RETRY_INITIAL_MS: '50',
      CALLBACK_RETRY_MAX_DELAY_MS: '200',
      CALLBACK_RETRY_SPAN_MS: '4000',
      CALLBACK_BREAKER_FAILURES: '3',
      CALLBACK_BREAKER_COOLDOWN_MS: '400',
      CALLBACK_CONCURRENCY: '2',
      CALLBACK_POLL_MS: '100',
    });
    callbacks = createCallbacks({ db: database.db, kafka: kafka.kafka, logger, config });
    await callbacks.start();
  });

  afterAll(async () => {
    releaseSlow();
    await callbacks?.stop();
    await receiver?.close();
  });

  describe('when the endpoint answers 2xx', () => {
    it('POSTs the outcome as it is on Kafka, signed with every secret, once', async () => {
      const sent = await publish(buildOutcome({ command_source: 'ok', status: 'rejected' }));
      const webhookId = `${sent.id}.rejected`;
      const [callback] = await until(
        'the callback',
        () => receivedFor('ok', webhookId).length > 0 && receivedFor('ok', webhookId),
      );
      expect(callback!.body).toBe(sent.value);
      expect(callback!.headers['content-type']).toMatch(/^application\/cloudevents\+json/);
      // svix's Webhook.verify accepts it with either secret of the rotation.
      expect(callback!.verifiedWith).toEqual([0, 1]);
      const delivery = await until('delivered', async () => {
        const d = await deliveryOf('ok', sent.id);
        return d?.state === 'delivered' && d;
      });
      expect(await attemptsOf(delivery.id)).toEqual([{ result: 'delivered', http_status: 204 }]);
    });

    it('delivers a republished outcome (same CloudEvent id and status) once', async () => {
      const outcome = buildOutcome({ command_source: 'ok' });
      const first = await publish(outcome);
      await publish(outcome, first.id);
      // A later outcome of the same source and target, so on the same partition behind the
      // republished one: once it is delivered, the republished one had its chance.
      const later = await publish(buildOutcome({ command_source: 'ok', target_id: outcome.target_id }));
      await until('the later callback', () => receivedFor('ok', `${later.id}.applied`).length > 0);
      await until(
        'the first delivered',
        async () => (await deliveryOf('ok', first.id))?.state === 'delivered',
      );
      expect(receivedFor('ok', `${first.id}.applied`)).toHaveLength(1);
      expect(await sql('SELECT 1 FROM callback_deliveries WHERE event_id = $1', [first.id])).toHaveLength(1);
    });

    it('keeps no delivery for a source without PMS_CALLBACKS', async () => {
      const outcome = buildOutcome({ command_source: 'no-callbacks' });
      const other = await publish(outcome);
      // Behind it on its partition (the same key): once this one is delivered, the other was read.
      const later = await publish(buildOutcome({ command_source: 'ok', target_id: outcome.target_id }));
      await until('a later callback', () => receivedFor('ok', `${later.id}.applied`).length > 0);
      expect(await sql('SELECT 1 FROM callback_deliveries WHERE event_id = $1', [other.id])).toHaveLength(0);
    });
  });

  describe('when the endpoint answers 500, then 2xx', () => {
    it('retries with the same webhook-id until delivered', async () => {
      const sent = await publish(buildOutcome({ command_source: 'flaky' }));
      const webhookId = `${sent.id}.applied`;
      const delivery = await until('delivered', async () => {
        const d = await deliveryOf('flaky', sent.id);
        return d?.state === 'delivered' && d;
      });
      expect(await attemptsOf(delivery.id)).toEqual([
        { result: 'failed', http_status: 500 },
        { result: 'delivered', http_status: 200 },
      ]);
      const got = receivedFor('flaky', webhookId);
      expect(got).toHaveLength(2);
      expect(got.every((r) => r.verifiedWith.length === 1 && r.body === sent.value)).toBe(true);
    });
  });

  describe('when the endpoint answers slowly, past its time-out', () => {
    it('counts a time-out and retries, same webhook-id', async () => {
      const sent = await publish(buildOutcome({ command_source: 'sluggish' }));
      const delivery = await until('delivered', async () => {
        const d = await deliveryOf('sluggish', sent.id);
        return d?.state === 'delivered' && d;
      });
      expect((await attemptsOf(delivery.id)).map((a) => a.result)).toEqual(['timeout', 'delivered']);
      expect(receivedFor('sluggish', `${sent.id}.applied`)).toHaveLength(2);
    });
  });

  describe('when the endpoint answers 410 Gone', () => {
    it('disables the endpoint: nothing more is sent until it is enabled again', async () => {
      // The disable is slow to commit (a loaded database: the endpoint's row is held), while the
      // deliverer reads the endpoints every 100 ms and sees it still enabled: those reads must not
      // undo the 410 and send the gone endpoint the delivery again once it is recorded.
      const held = await database.sql.connect();
      await held.query('BEGIN');
      await held.query(`SELECT 1 FROM callback_endpoints WHERE source = 'gone' FOR UPDATE`);
      const first = await publish(buildOutcome({ command_source: 'gone' }));
      await until('the 410', () => receivedFor('gone', `${first.id}.applied`).length > 0);
      await new Promise((r) => setTimeout(r, 500));
      await held.query('COMMIT');
      held.release();
      await until(
        'disabled',
        async () =>
          (
            await sql('SELECT 1 FROM callback_endpoints WHERE source = $1 AND disabled_url IS NOT NULL', [
              'gone',
            ])
          ).length > 0,
      );
      const second = await publish(buildOutcome({ command_source: 'gone' }));
      const later = await publish(buildOutcome({ command_source: 'ok' }));
      await until('queued', async () => (await deliveryOf('gone', second.id)) !== undefined);
      await until('a later callback', () => receivedFor('ok', `${later.id}.applied`).length > 0);
      await new Promise((r) => setTimeout(r, 500));
      expect(receiver.received.filter((r) => r.source === 'gone')).toHaveLength(1);
      expect((await deliveryOf('gone', second.id))?.state).toBe('pending');

      goneAnswers = 200;
      expect(await enableEndpoint(database.db, 'gone')).toBe(true);
      await until(
        'both delivered',
        async () =>
          (await deliveryOf('gone', first.id))?.state === 'delivered' &&
          (await deliveryOf('gone', second.id))?.state === 'delivered',
      );
      expect(receivedFor('gone', `${first.id}.applied`).map((r) => r.verifiedWith)).toEqual([[0], [0]]);
    });
  });

  describe('when a source’s endpoint is stuck', () => {
    it('does not delay another source’s deliveries', async () => {
      const stuck = await Promise.all(
        [1, 2, 3, 4].map(() => publish(buildOutcome({ command_source: 'slow' }))),
      );
      await until(
        'the stuck endpoint holds two',
        () => receiver.received.filter((r) => r.source === 'slow').length >= 2,
      );
      const others = await Promise.all(
        [1, 2, 3, 4, 5].map(() => publish(buildOutcome({ command_source: 'ok' }))),
      );
      for (const o of others) {
        await until(
          'the other source delivered',
          async () => (await deliveryOf('ok', o.id))?.state === 'delivered',
        );
      }
      // All of them while the stuck endpoint still holds its requests.
      for (const s of stuck) expect((await deliveryOf('slow', s.id))?.state).toBe('pending');
      releaseSlow();
      for (const s of stuck) {
        await until(
          'the stuck ones delivered',
          async () => (await deliveryOf('slow', s.id))?.state === 'delivered',
        );
      }
    });
  });

  describe('when nothing answers (connection refused)', () => {
    it('opens the breaker and probes instead of hammering, dead-letters at the end of the span, and redelivers', async () => {
      const sent = await Promise.all(
        [1, 2, 3, 4, 5, 6].map(() => publish(buildOutcome({ command_source: 'refused' }))),
      );
      await until(
        'open',
        async () =>
          (
            await sql('SELECT 1 FROM callback_endpoints WHERE source = $1 AND breaker <> $2', [
              'refused',
              'closed',
            ])
          ).length > 0,
      );
      await until(
        'every one dead',
        async () => {
          for (const s of sent) if ((await deliveryOf('refused', s.id))?.state !== 'dead') return false;
          return true;
        },
        30_000,
      );
      const [{ n }] = (await sql<{ n: number }>(
        "SELECT count(*)::int AS n FROM callback_attempts a JOIN callback_deliveries d ON d.id = a.delivery_id WHERE d.source = 'refused'",
      )) as [{ n: number }];
      const results = await sql<{ result: string }>(
        "SELECT DISTINCT result FROM callback_attempts a JOIN callback_deliveries d ON d.id = a.delivery_id WHERE d.source = 'refused'",
      );
      expect(results.map((r) => r.result)).toEqual(['network_error']);
      // Without the breaker, 6 deliveries retried every ≤ 200 ms for the 4 s span make ~120+
      // attempts; with it: 3 failures open it, then one probe per cooldown (400 ms), plus each
      // delivery's last attempt.
      expect(n).toBeLessThan(40);

      // The endpoint comes back; ops redeliver two, then the rest.
      const { startReceiverOn } = await import('./receiver-on-port.js');
      const back = await startReceiverOn(refusedPort, secrets.refused);
      try {
        const ids = await Promise.all(
          sent.slice(0, 2).map(async (s) => (await deliveryOf('refused', s.id))!.id),
        );
        expect((await redeliverCallbacks(database.db, { ids, actor: 'test' })).sort()).toEqual(
          [...ids].sort(),
        );
        await until('two delivered', async () => {
          for (const s of sent.slice(0, 2))
            if ((await deliveryOf('refused', s.id))?.state !== 'delivered') return false;
          return true;
        });
        expect((await deliveryOf('refused', sent[2]!.id))?.state).toBe('dead');
        expect(
          await redeliverCallbacks(database.db, { all: true, source: 'refused', actor: 'test' }),
        ).toHaveLength(4);
        await until('all delivered', async () => {
          for (const s of sent) if ((await deliveryOf('refused', s.id))?.state !== 'delivered') return false;
          return true;
        });
        // The same webhook-id as the failed attempts had, each verified by svix.
        expect(new Set(back.received.map((r) => r.webhookId))).toEqual(
          new Set(sent.map((s) => `${s.id}.applied`)),
        );
        expect(back.received.every((r) => r.verified)).toBe(true);
        const audit = await sql<{ action: string }>(
          "SELECT action FROM audit_log WHERE action = 'callback_redeliver'",
        );
        expect(audit).toHaveLength(2);
      } finally {
        await back.close();
      }
    });
  });

  describe('the ops API', () => {
    it("lists each source's endpoint and queue, and refuses a redelivery it cannot read", async () => {
      const app = createHttpApp({
        logger,
        mounts: [
          { path: '/ops/api', router: createCallbackOpsRouter({ db: database.db, actorOf: () => 'test' }) },
        ],
      });
      const server = await new Promise<Server>((resolve) => {
        const s = app.listen(0, '127.0.0.1', () => resolve(s));
      });
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ops/api`;
      try {
        const listed = (await (await fetch(`${base}/callbacks`)).json()) as {
          sources: Array<{ source: string; endpoint: string; delivered: number }>;
        };
        expect(listed.sources.map((s) => s.source)).toEqual([
          'flaky',
          'gone',
          'ok',
          'refused',
          'slow',
          'sluggish',
        ]);
        expect(listed.sources.find((s) => s.source === 'flaky')).toMatchObject({
          endpoint: 'closed',
          delivered: 1,
        });
        const post = (body: unknown) =>
          fetch(`${base}/callbacks/redeliver`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
        const bad = await post({ ids: ['1'], all: true });
        expect(bad.status).toBe(400);
        expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('validation_error');
        expect(await (await post({ ids: ['999999'] })).json()).toEqual({ redelivered: [] });
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });
  });
});
