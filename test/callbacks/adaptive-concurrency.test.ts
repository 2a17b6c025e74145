import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdaptiveLimit } from '../../src/callbacks/adaptive-limit.js';
import { createCallbackDeliverer, type CallbackDeliverer } from '../../src/callbacks/callback-deliverer.js';
import { callbackMetrics } from '../../src/callbacks/callback-metrics.js';
import { insertDeliveries, listDeliveries } from '../../src/callbacks/callback-repository.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { buildSecret } from '../receiver/webhooks.js';
import { until } from './callback-receiver.js';

// Issue 43 item 3: deliveries in flight per endpoint follow its answers, on a real HTTP endpoint
// and PostgreSQL. No timing is asserted: the endpoint's answers are made fast, slow or failing.
const logger = createLogger({ level: 'silent' });

type Mode = { status: number; delayMs: number };
/** A PMS endpoint per source whose answers the test sets, counting the requests in flight. */
function endpoint() {
  const modes = new Map<string, Mode>();
  const inFlight = new Map<string, number>();
  /** Each request's in-flight count on arrival (itself included), per source. */
  const seen = new Map<string, number[]>();
  const server: Server = createServer((req, res) => {
    const source = (req.url ?? '/').slice(1);
    const now = (inFlight.get(source) ?? 0) + 1;
    inFlight.set(source, now);
    seen.set(source, [...(seen.get(source) ?? []), now]);
    req.resume();
    req.on('end', () => {
      const mode = modes.get(source) ?? { status: 204, delayMs: 0 };
      setTimeout(() => {
        inFlight.set(source, (inFlight.get(source) ?? 1) - 1);
        res.writeHead(mode.status).end();
      }, mode.delayMs);
    });
  });
  return { server, modes, seen };
}

let database: TestDatabase;
let deliverer: CallbackDeliverer;
let receiver: ReturnType<typeof endpoint>;
let seq = 0;

async function enqueue(source: string, n: number): Promise<void> {
  await insertDeliveries(
    database.db,
    Array.from({ length: n }, () => {
      const id = `out-${++seq}`;
      return {
        source,
        webhookId: `${id}.applied`,
        eventId: id,
        eventType: 'rentbridge.outcome.rental-payment',
        commandType: 'rental_payment',
        commandId: `pay-${seq}`,
        outcomeStatus: 'applied',
        payload: JSON.stringify({ id }),
      };
    }),
  );
  deliverer.wake([source]);
}

async function pending(source: string): Promise<number> {
  return (await listDeliveries(database.db, { source, state: 'pending' })).length;
}

async function limitOf(source: string): Promise<number> {
  const { values } = await callbackMetrics.limit.get();
  return values.find((v) => v.labels.source === source)?.value ?? 0;
}

/** The most requests in flight at once among the source's requests from the `from`-th on. */
const peak = (source: string, from = 0) => Math.max(0, ...(receiver.seen.get(source) ?? []).slice(from));

beforeAll(async () => {
  database = await createTestDatabase();
  receiver = endpoint();
  await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
  const url = (s: string) => `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}/${s}`;
  deliverer = createCallbackDeliverer({
    db: database.db,
    logger,
    endpoints: {
      adapt: { url: url('adapt'), secrets: [buildSecret()] },
      failing: { url: url('failing'), secrets: [buildSecret()] },
      other: { url: url('other'), secrets: [buildSecret()] },
    },
    timeoutMs: 10_000,
    // Failed deliveries are due again soon, and their retries keep the failing endpoint busy.
    schedule: { initialMs: 20, maxDelayMs: 50, spanMs: 600_000 },
    breaker: { failureThreshold: 1000, cooldownMs: 1000, maxCooldownMs: 1000 },
    concurrency: 4,
    maxConcurrency: 64,
    pollMs: 100,
  });
  await deliverer.start();
});

afterAll(async () => {
  await deliverer?.stop();
  receiver?.server.closeAllConnections();
  await new Promise((r) => receiver?.server.close(r));
  await database?.drop();
});

describe('deliveries in flight per endpoint', () => {
  it('grow past CALLBACK_CONCURRENCY while the endpoint answers fast, shrink when it slows, grow again when it recovers', async () => {
    receiver.modes.set('adapt', { status: 204, delayMs: 50 });
    await enqueue('adapt', 600);
    await until('the fast burst delivered', async () => (await pending('adapt')) === 0, 120_000);
    const fastLimit = await limitOf('adapt');
    expect(fastLimit).toBeGreaterThan(8);
    expect(peak('adapt')).toBeGreaterThan(8);

    // Thirty times slower: each round of answers sent at the high limit lowers it (down to
    // CALLBACK_CONCURRENCY; after 30-60 s the slower answers become the endpoint's usual time,
    // src/callbacks/adaptive-limit.ts, and it grows again by one per round: on a loaded machine
    // the batch can last that long, so the figures below are "fewer", not "the floor").
    receiver.modes.set('adapt', { status: 204, delayMs: 1500 });
    const slowFrom = receiver.seen.get('adapt')!.length;
    await enqueue('adapt', 150);
    await until('the slow batch delivered', async () => (await pending('adapt')) === 0, 120_000);
    const slowLimit = await limitOf('adapt');
    expect(slowLimit).toBeLessThan(fastLimit);
    // The last requests of the slow batch met fewer in flight than the fast burst did.
    expect(peak('adapt', slowFrom + 100)).toBeLessThan(peak('adapt'));

    receiver.modes.set('adapt', { status: 204, delayMs: 50 });
    await enqueue('adapt', 600);
    await until('the recovered burst delivered', async () => (await pending('adapt')) === 0, 120_000);
    expect(await limitOf('adapt')).toBeGreaterThan(slowLimit);
  }, 300_000);

  it('a failing endpoint gets fewer, and never delays another source', async () => {
    receiver.modes.set('failing', { status: 204, delayMs: 50 });
    await enqueue('failing', 400);
    await until('the fast burst delivered', async () => (await pending('failing')) === 0, 120_000);
    const healthy = await limitOf('failing');
    receiver.modes.set('failing', { status: 500, delayMs: 200 });
    await enqueue('failing', 100);
    await until('failures counted', () => (receiver.seen.get('failing')?.length ?? 0) >= 400 + 150, 120_000);
    expect(await limitOf('failing')).toBeLessThan(healthy / 4);
    // Meanwhile another source's burst is delivered in full while the failing one still waits.
    receiver.modes.set('other', { status: 204, delayMs: 50 });
    await enqueue('other', 300);
    await until('the other source delivered', async () => (await pending('other')) === 0, 120_000);
    expect(await pending('failing')).toBe(100);
  }, 300_000);
});

describe('the adaptive limit', () => {
  it('starts at its initial value, doubles per round trip until a slowdown, then grows by one per round trip', () => {
    const limit = createAdaptiveLimit({ initial: 4, max: 64 });
    let now = 0;
    for (let i = 0; i < 4; i++) limit.record({ ok: true, durationMs: 10, sentAt: now, inFlight: 4 }, now);
    expect(limit.current()).toBe(8);
    now = 100;
    limit.record({ ok: true, durationMs: 500, sentAt: now - 500, inFlight: 8 }, now);
    expect(limit.current()).toBe(6);
    // Sent before the decrease: it does not lower the limit again.
    limit.record({ ok: true, durationMs: 500, sentAt: now - 400, inFlight: 8 }, now + 1);
    expect(limit.current()).toBe(6);
    // Slowness alone never lowers it below the initial limit.
    for (let t = 101; t < 120; t++) limit.record({ ok: true, durationMs: 500, sentAt: t, inFlight: 6 }, t);
    expect(limit.current()).toBe(4);
    for (let i = 0; i < 5; i++) limit.record({ ok: true, durationMs: 10, sentAt: 200, inFlight: 4 }, 210);
    expect(limit.current()).toBe(5);
  });

  it('halves on a failure, never below 1 nor above its max, and does not grow while unused', () => {
    const limit = createAdaptiveLimit({ initial: 10, max: 12 });
    for (let i = 0; i < 10; i++) limit.record({ ok: true, durationMs: 10, sentAt: 0, inFlight: 10 }, 1);
    expect(limit.current()).toBe(12);
    limit.record({ ok: false, durationMs: 10, sentAt: 2, inFlight: 12 }, 3);
    expect(limit.current()).toBe(6);
    for (let t = 4; t < 20; t++) limit.record({ ok: false, durationMs: 10, sentAt: t, inFlight: 1 }, t);
    expect(limit.current()).toBe(1);
    for (let t = 20; t < 30; t++) limit.record({ ok: true, durationMs: 10, sentAt: t, inFlight: 0 }, t);
    expect(limit.current()).toBe(1);
  });
});
