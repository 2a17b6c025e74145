import { beforeAll, describe, expect, it } from 'vitest';
import { parseCloudEvent } from '../../src/contracts/cloudevent.js';
import { buildRentPayment, buildSecret, send } from '../receiver/webhooks.js';
import { useRelayFixture } from './relay-fixture.js';

const acme = buildSecret();
const BACKLOG_TOPIC = 'partner.applications';
const COMMAND_TOPIC = 'commands.rental-payments';
const ROWS = 20_000;
const KEYS = 200;

/**
 * Issue 33: a large backlog drained through the pipelined per-topic streams, read back from Kafka
 * and counted; a command accepted while it drains arrives on its own topic. Timing is the bench's
 * (`npm run bench -- relay`), not this test's.
 */
describe('relay draining a large backlog', () => {
  const fixture = useRelayFixture({ topics: [BACKLOG_TOPIC, COMMAND_TOPIC], acmeSecret: acme });
  beforeAll(async () => {
    // Published rows kept for retention below the backlog: the reads must step over them.
    await fixture.database.sql.query(
      `INSERT INTO outbox (event_id, topic, key, type, source, data, published_at)
       SELECT gen_random_uuid(), $1, 'app-' || (i % $2), 'partner.application.updated', '/poller/applications',
              jsonb_build_object('seq', -i), now()
         FROM generate_series(1, 5000) AS i`,
      [BACKLOG_TOPIC, KEYS],
    );
    // seq: the row's rank among the rows of its key, in id (commit) order.
    await fixture.database.sql.query(
      `INSERT INTO outbox (event_id, topic, key, type, source, data)
       SELECT gen_random_uuid(), $1, 'app-' || (i % $2), 'partner.application.updated', '/poller/applications',
              jsonb_build_object('seq', i / $2, 'notes', repeat('x', 300))
         FROM generate_series(0, $3 - 1) AS i`,
      [BACKLOG_TOPIC, KEYS, ROWS],
    );
  });

  it('publishes every row at least once, in order per key, and a command sent meanwhile arrives', async () => {
    const { rows: expected } = await fixture.database.sql.query<{ event_id: string }>(
      'SELECT event_id FROM outbox WHERE published_at IS NULL',
    );
    const relay = fixture.relay();
    await relay.start();

    // The drain is under way: a command accepted by the receiver now.
    await expect
      .poll(async () => (relay.status().lastAckAt ?? 0) > 0, { timeout: 30_000, interval: 20 })
      .toBe(true);
    const payment = buildRentPayment({ enrollment_id: 'enr-during-drain' });
    const accepted = await send(fixture.receiver.url, '/webhooks/pms/acme', payment, { secret: acme });
    expect(accepted.status).toBe(202);
    const commandId = String(accepted.json.event_id);

    const commands = await fixture.kafka.readMessages(COMMAND_TOPIC, 1, 60_000);
    expect(commands.map((m) => parseCloudEvent(m.value).id)).toContain(commandId);

    await expect
      .poll(
        async () =>
          Number(
            (
              await fixture.database.sql.query<{ n: string }>(
                'SELECT count(*) AS n FROM outbox WHERE published_at IS NULL',
              )
            ).rows[0]!.n,
          ),
        { timeout: 180_000, interval: 500 },
      )
      .toBe(0);
    expect(relay.status()).toMatchObject({ backlog: expect.any(Number) });

    // Everything the topic holds (repeats too: at least once), counted from its offsets.
    const admin = fixture.kafka.kafka.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(`${fixture.kafka.prefix}${BACKLOG_TOPIC}`);
    await admin.disconnect();
    const total = offsets.reduce((n, o) => n + Number(o.high), 0);
    const messages = await fixture.kafka.readMessages(BACKLOG_TOPIC, total, 120_000);
    const ids = new Set(messages.map((m) => parseCloudEvent(m.value).id));
    const missing = expected.filter((r) => !ids.has(r.event_id));
    expect(missing).toEqual([]);
    expect(messages.length).toBeGreaterThanOrEqual(ROWS);

    // Per key, in partition order: each row's first appearance comes after its predecessor's.
    const byKey = new Map<string, number[]>();
    for (const m of messages) {
      const seq = (parseCloudEvent(m.value).data as { seq: number }).seq;
      const key = m.key!.toString();
      byKey.set(key, [...(byKey.get(key) ?? []), seq]);
    }
    expect(byKey.size).toBe(KEYS);
    for (const [key, seqs] of byKey) {
      const firsts: number[] = [];
      const seen = new Set<number>();
      for (const s of seqs) {
        if (!seen.has(s)) firsts.push(s);
        seen.add(s);
      }
      expect({ key, firsts }).toEqual({ key, firsts: [...firsts].sort((a, b) => a - b) });
      expect(firsts.length).toBe(ROWS / KEYS);
    }
  }, 300_000);
});
