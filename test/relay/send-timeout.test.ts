import { beforeAll, describe, expect, it } from 'vitest';
import { parseCloudEvent } from '../../src/contracts/cloudevent.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';
import { useRelayFixture } from './relay-fixture.js';
import { buildRentPayment, buildSecret, send, type TestReceiver } from '../receiver/webhooks.js';

const acme = buildSecret();
const TOPIC = 'commands.rental-payments';

/**
 * Issue 53, item 3: a send with no ack within RELAY_SEND_TIMEOUT_MS has an unknown fate (Kafka may
 * have written it). The relay says so on its rows and waits for the SAME send, retried by the same
 * idempotent producer, instead of sending the rows again beside it (which, with the ack only late,
 * wrote each row twice: a third of the commands were on Kafka twice after a cluster outage). And a
 * relay started after one that stopped publishes nothing the broker acknowledged already.
 */
describe('relay sends whose ack comes late', () => {
  const fixture = useRelayFixture({ topics: [TOPIC], acmeSecret: acme });
  let database: TestDatabase;
  let kafka: TestKafka;
  let receiver: TestReceiver;
  beforeAll(() => {
    ({ database, kafka, receiver } = fixture);
  });

  const unpublished = async () =>
    Number(
      (await database.sql.query<{ n: string }>('SELECT count(*) AS n FROM outbox WHERE published_at IS NULL'))
        .rows[0]!.n,
    );

  async function onKafka(): Promise<string[]> {
    const admin = kafka.kafka.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(`${kafka.prefix}${TOPIC}`);
    await admin.disconnect();
    const total = offsets.reduce((n, o) => n + Number(o.high), 0);
    return (await kafka.readMessages(TOPIC, total)).map((m) => parseCloudEvent(m.value).id);
  }

  it('publishes each row once though every ack comes after the time-out, and a restarted relay republishes none', async () => {
    // 1 ms: no ack can come within it, so every send of this relay is one whose fate it does not know.
    const relay = fixture.relay({ sendTimeoutMs: 1 });
    await relay.start();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await send(
        receiver.url,
        '/webhooks/pms/acme',
        buildRentPayment({ enrollment_id: `enr-late-${i % 5}` }),
        { secret: acme },
      );
      expect(res.status).toBe(202);
      ids.push(String(res.json.event_id));
    }
    await expect.poll(unpublished, { timeout: 30_000, interval: 100 }).toBe(0);
    await relay.stop();
    expect((await onKafka()).sort()).toEqual([...ids].sort());

    // A new relay (a restart) finds nothing to publish: the acknowledged rows were marked.
    const next = fixture.relay();
    await next.drain();
    expect((await onKafka()).sort()).toEqual([...ids].sort());
  });
});
