import { beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { parseCloudEvent } from '../../src/contracts/cloudevent.js';
import type { Relay, RelayOptions } from '../../src/relay/relay.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';
import { useRelayFixture } from './relay-fixture.js';
import { buildRentPayment, buildSecret, send, type TestReceiver } from '../receiver/webhooks.js';

const acme = buildSecret();
const TOPIC = 'commands.rental-payments';

describe('relay', () => {
  const fixture = useRelayFixture({ topics: [TOPIC], acmeSecret: acme });
  let database: TestDatabase;
  let kafka: TestKafka;
  let receiver: TestReceiver;
  beforeAll(() => {
    ({ database, kafka, receiver } = fixture);
  });
  const relay = (overrides: Partial<RelayOptions> = {}): Relay => fixture.relay(overrides);

  async function ingest(n: number, enrollment = 'enr-order'): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await send(
        receiver.url,
        '/webhooks/pms/acme',
        buildRentPayment({ enrollment_id: enrollment }),
        { secret: acme },
      );
      expect(res.status).toBe(202);
      ids.push(String(res.json.event_id));
    }
    return ids;
  }

  async function unpublished(): Promise<number> {
    const { rows } = await database.sql.query<{ n: string }>(
      'SELECT count(*) AS n FROM outbox WHERE published_at IS NULL',
    );
    return Number(rows[0]?.n);
  }

  async function eventually(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
    await expect.poll(check, { timeout: timeoutMs, interval: 100 }).toBe(true);
  }

  /** CloudEvent ids of the messages keyed `key`, in the order of their partition. */
  async function readIds(key: string, count: number): Promise<string[]> {
    const total = await messageCount();
    expect(total).toBeGreaterThanOrEqual(count);
    const messages = await kafka.readMessages(TOPIC, total);
    return messages.filter((m) => m.key?.toString() === key).map((m) => parseCloudEvent(m.value).id);
  }

  async function messageCount(): Promise<number> {
    const admin = kafka.kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets(`${kafka.prefix}${TOPIC}`);
      return offsets.reduce((n, o) => n + Number(o.high), 0);
    } finally {
      await admin.disconnect();
    }
  }

  describe('when the broker is unreachable while webhooks are acknowledged', () => {
    it('keeps the rows and publishes every one, in order, once a broker answers', async () => {
      const dead = new Kafka({
        clientId: 'dead',
        brokers: ['127.0.0.1:1'],
        logLevel: logLevel.NOTHING,
        connectionTimeout: 300,
        retry: { retries: 0 },
      });
      const down = relay({ kafka: dead });
      await down.start();
      const ids = await ingest(6);
      // The relay tried and failed: the rows wait, marked with the error.
      await eventually(async () => {
        const { rows } = await database.sql.query<{ n: string }>(
          'SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND last_error IS NOT NULL',
        );
        return Number(rows[0]?.n) === 6;
      });
      await down.stop();

      await relay().start();
      await eventually(async () => (await unpublished()) === 0);
      expect(await readIds('enr-order', 6)).toEqual(ids);
    });
  });

  describe('when the relay dies after Kafka acknowledged a batch but before marking it', () => {
    it('publishes the batch again with the same CloudEvent ids, losing nothing', async () => {
      const ids = await ingest(4, 'enr-crash');
      let sends = 0;
      const crashing = relay({
        afterSend: async () => {
          sends += 1;
          throw new Error('killed between send and mark');
        },
      });
      await crashing.start();
      await eventually(async () => sends > 0);
      await crashing.stop();
      expect(await unpublished()).toBe(4);

      await relay().start();
      await eventually(async () => (await unpublished()) === 0);
      // The dead relay's batch (once per attempt it made), then the same events again.
      const expected = Array.from({ length: sends + 1 }, () => ids).flat();
      expect(await readIds('enr-crash', expected.length)).toEqual(expected);
    });
  });

  describe('when two relays run', () => {
    it('lets one publish while the other stands by, and the standby takes over when it stops', async () => {
      const first = relay();
      const second = relay();
      await first.start();
      await eventually(async () => first.isPublisher());
      await second.start();
      await expect(second.drain()).rejects.toThrow(/another relay/);

      expect(second.isPublisher()).toBe(false);
      await first.stop();
      await eventually(async () => second.isPublisher());
      const ids = await ingest(2, 'enr-takeover');
      await eventually(async () => (await unpublished()) === 0);
      expect(await readIds('enr-takeover', 2)).toEqual(ids);
    });
  });

  describe('when published rows are older than the retention', () => {
    it('prunes them and keeps unpublished ones', async () => {
      await database.sql.query(
        `UPDATE outbox SET published_at = now() - interval '5 hours' WHERE published_at IS NOT NULL`,
      );
      const dead = new Kafka({
        clientId: 'dead',
        brokers: ['127.0.0.1:1'],
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
      });
      // A publisher that cannot publish still prunes what was published before.
      const pruning = relay({ retentionHours: 1 });
      await ingest(1, 'enr-prune');
      await pruning.drain();
      await database.sql.query(`UPDATE outbox SET published_at = NULL WHERE key = 'enr-prune'`);
      await pruning.stop();
      const r = relay({ retentionHours: 1, kafka: dead });
      await r.start();
      await eventually(async () => {
        const { rows } = await database.sql.query<{ n: string }>('SELECT count(*) AS n FROM outbox');
        return Number(rows[0]?.n) === 1;
      });
      expect(await unpublished()).toBe(1);
      // Webhook receipts are pruned by their owner, the receiver: test/receiver/receipt-pruner.test.ts.
    });
  });

  describe('when it has published more rows than its vacuum bound', () => {
    it('vacuums the outbox, so the next drain does not walk the published rows', async () => {
      const vacuums = async () =>
        Number(
          (
            await database.sql.query<{ n: string }>(
              `SELECT vacuum_count AS n FROM pg_stat_user_tables
                WHERE relname = 'outbox' AND schemaname = current_schema()`,
            )
          ).rows[0]?.n ?? 0,
        );
      const before = await vacuums();
      const r = relay({ vacuumAfterRows: 3, sweepMs: 50 });
      await r.start();
      try {
        await ingest(4, 'enr-vacuum');
        await eventually(async () => (await unpublished()) === 0);
        await eventually(async () => (await vacuums()) > before);
      } finally {
        await r.stop();
      }
    });
  });
});
