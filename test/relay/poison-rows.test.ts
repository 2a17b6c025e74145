import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseCloudEvent } from '../../src/contracts/cloudevent.js';
import { registry } from '../../src/metrics.js';
import { relayProgressCheck } from '../../src/app/readiness.js';
import type { Relay, RelayOptions } from '../../src/relay/relay.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';
import { useRelayFixture } from './relay-fixture.js';
import {
  buildDecision,
  buildRentPayment,
  buildSecret,
  send,
  type TestReceiver,
} from '../receiver/webhooks.js';

/**
 * Issue 14, point 1: no row stops the relay. Against the real broker, whose message.max.bytes
 * is its default (1 MiB): a burst of large webhooks, a row the broker refuses, a partly refused
 * pass, and the readiness check that sees a relay making no progress.
 */
const acme = buildSecret();
const PAYMENTS = 'commands.rental-payments';
const DECISIONS = 'commands.application-decisions';
const UNROUTED = 'inbound.unrouted';

describe('relay with poison rows', () => {
  const fixture = useRelayFixture({
    topics: [PAYMENTS, DECISIONS, UNROUTED],
    acmeSecret: acme,
    maxBodyBytes: 300 * 1024,
  });
  let database: TestDatabase;
  let kafka: TestKafka;
  let receiver: TestReceiver;
  beforeAll(() => {
    ({ database, kafka, receiver } = fixture);
  });
  const relay = (overrides: Partial<RelayOptions> = {}): Relay => fixture.relay(overrides);

  async function eventually(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    await expect.poll(check, { timeout: timeoutMs, interval: 100 }).toBe(true);
  }

  async function count(sql: string, params: unknown[] = []): Promise<number> {
    return Number((await database.sql.query<{ n: string }>(sql, params)).rows[0]?.n);
  }

  async function offsets(topic: string): Promise<number> {
    const admin = kafka.kafka.admin();
    await admin.connect();
    try {
      const o = await admin.fetchTopicOffsets(`${kafka.prefix}${topic}`);
      return o.reduce((n, p) => n + Number(p.high), 0);
    } finally {
      await admin.disconnect();
    }
  }

  /** How many messages of `topic` carry the CloudEvent id. */
  async function copiesOf(topic: string, eventId: string): Promise<number> {
    const messages = await kafka.readMessages(topic, await offsets(topic), 10_000);
    return messages.filter((m) => parseCloudEvent(m.value).id === eventId).length;
  }

  describe('when twenty signed webhooks of 250 KB arrive at once', () => {
    it('publishes all of them and a small command sent after them, each once', async () => {
      const before = await offsets(UNROUTED);
      const bursts = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          send(
            receiver.url,
            '/webhooks/pms/acme',
            { type: 'inventory.snapshot', data: { n: i, blob: 'x'.repeat(250 * 1024) } },
            { secret: acme },
          ),
        ),
      );
      expect(bursts.map((r) => r.status)).toEqual(Array(20).fill(202));
      const small = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment(), { secret: acme });
      expect(small.status).toBe(202);

      const started = Date.now();
      await relay().start();
      await eventually(
        async () => (await count('SELECT count(*) AS n FROM outbox WHERE published_at IS NULL')) === 0,
      );
      const drainMs = Date.now() - started;
      console.log(`burst of 20 x 250 KB drained in ${drainMs} ms`);

      expect(await offsets(UNROUTED)).toBe(before + 20);
      expect(await copiesOf(PAYMENTS, String(small.json.event_id))).toBe(1);
      expect(await count('SELECT count(*) AS n FROM outbox WHERE parked_at IS NOT NULL')).toBe(0);
    });
  });

  describe('when the broker refuses a row as too large', () => {
    it('parks that row with its reason and publishes every other row once, on its topic and on others', async () => {
      // Written as any path could write it (the poller, a future producer): 1.5 MB of data.
      const bigId = randomUUID();
      await database.sql.query(
        `INSERT INTO outbox (event_id, topic, key, type, source, data)
         VALUES ($1, $2, 'app-big', 'test.big', '/test', $3::jsonb)`,
        [bigId, DECISIONS, JSON.stringify({ blob: 'y'.repeat(1_500_000) })],
      );
      const behind = await send(
        receiver.url,
        '/webhooks/pms/acme',
        buildDecision({ application_id: 'app-big' }),
        {
          secret: acme,
        },
      );
      const other = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment(), { secret: acme });
      expect([behind.status, other.status]).toEqual([202, 202]);

      // Above the broker's limit, so that the broker itself refuses it (the relay's own bound would park it unsent).
      await relay({ maxBatchBytes: 3_000_000 }).start();
      await eventually(
        async () =>
          (await count(
            'SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND parked_at IS NULL',
          )) === 0,
      );
      // Time for any repeat to show.
      await new Promise((r) => setTimeout(r, 2000));

      const { rows } = await database.sql.query<{
        parked_at: Date | null;
        last_error: string | null;
        published_at: Date | null;
      }>('SELECT parked_at, last_error, published_at FROM outbox WHERE event_id = $1', [bigId]);
      expect(rows[0]?.parked_at).toBeInstanceOf(Date);
      expect(rows[0]?.published_at).toBeNull();
      expect(rows[0]?.last_error).toMatch(/too large/);
      expect(await copiesOf(DECISIONS, String(behind.json.event_id))).toBe(1);
      expect(await copiesOf(PAYMENTS, String(other.json.event_id))).toBe(1);
      expect(await registry.getSingleMetricAsString('rentbridge_relay_parked_total')).toContain(DECISIONS);
    });

    it('parks, without sending it, a row larger than RELAY_MAX_BATCH_BYTES', async () => {
      const bigId = randomUUID();
      await database.sql.query(
        `INSERT INTO outbox (event_id, topic, key, type, source, data)
         VALUES ($1, $2, 'enr-big', 'test.big', '/test', $3::jsonb)`,
        [bigId, PAYMENTS, JSON.stringify({ blob: 'z'.repeat(200_000) })],
      );
      const small = await send(
        receiver.url,
        '/webhooks/pms/acme',
        buildRentPayment({ enrollment_id: 'enr-big' }),
        {
          secret: acme,
        },
      );
      await relay({ maxBatchBytes: 100_000 }).start();
      await eventually(
        async () =>
          (await count(
            'SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND parked_at IS NULL',
          )) === 0,
      );
      const { rows } = await database.sql.query<{ last_error: string }>(
        'SELECT last_error FROM outbox WHERE event_id = $1',
        [bigId],
      );
      expect(rows[0]?.last_error).toMatch(/larger than RELAY_MAX_BATCH_BYTES/);
      expect(await copiesOf(PAYMENTS, String(small.json.event_id))).toBe(1);
      expect(await copiesOf(PAYMENTS, bigId)).toBe(0);
    });
  });

  describe('when no relay makes progress', () => {
    it('fails the readiness check and sets rentbridge_relay_stalled, and passes once the rows are out', async () => {
      const res = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment(), { secret: acme });
      expect(res.status).toBe(202);
      await database.sql.query(
        `UPDATE outbox SET created_at = now() - interval '10 minutes' WHERE published_at IS NULL AND parked_at IS NULL`,
      );
      const stalled = await relayProgressCheck(database.db, 120);
      expect(stalled).toEqual(expect.stringContaining('not making progress'));
      expect(await registry.getSingleMetricAsString('rentbridge_relay_stalled')).toMatch(
        /rentbridge_relay_stalled 1/,
      );

      await relay().start();
      await eventually(async () => (await relayProgressCheck(database.db, 120)) === true);
      // The running relay sets the gauge too, each second, from a reading that may have begun
      // before the row went out: the gauge may say 1 once more, until its next reading.
      await expect
        .poll(() => registry.getSingleMetricAsString('rentbridge_relay_stalled'), { timeout: 10_000 })
        .toMatch(/rentbridge_relay_stalled 0/);
    });
  });
});
