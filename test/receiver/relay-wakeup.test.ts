import { beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../../src/kafka/topics.js';
import type { Relay } from '../../src/relay/relay.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';
import { buildRentPayment, buildSecret, send, type TestReceiver } from './webhooks.js';

/**
 * The ingest writer wakes the relay after its commit (a NOTIFY of its own, outside the
 * acknowledging transaction): a relay whose sweep is ten minutes away still publishes an accepted
 * webhook at once. (NOTIFY channels are per database, not per schema: another process writing
 * to an outbox in the same database may wake this relay too, so on a shared server the test can
 * only fail for lack of a wake-up when the others are quiet: without one, it waited 26 s here.)
 */
const acme = buildSecret();

describe('an accepted webhook wakes the relay', () => {
  const app = useApp({
    topics: [TOPICS.rentalPayments],
    receiver: { partnerSecrets: [], pmsSecrets: { acme: [acme] } },
    relay: { sweepMs: 600_000 },
  });
  let database: TestDatabase;
  let kafka: TestKafka;
  let receiver: TestReceiver;
  let relay: Relay;

  beforeAll(() => ({ database, kafka, receiver, relay } = app));

  it('publishes the webhook without waiting for the sweep', async () => {
    // Once it leads, its session LISTENs: from then on no wake-up is lost. Then let its first
    // pass over the (empty) outbox end, so that only a wake-up (or the sweep) starts another.
    await expect.poll(() => relay.isPublisher(), { timeout: 30_000, interval: 50 }).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    const res = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment({ enrollment_id: 'enr-9' }), {
      secret: acme,
    });
    expect(res.status).toBe(202);
    const [message] = await kafka.readMessages('commands.rental-payments', 1, 10_000);
    expect(message?.key?.toString()).toBe('enr-9');
    // The relay marks the row once the broker has acknowledged the message, so a consumer may
    // read the message a moment before the mark commits (CI once checked in that moment). The
    // mark still comes from this wake-up, minutes before the sweep.
    await expect
      .poll(
        async () =>
          (
            await database.sql.query<{ published: boolean }>(
              'SELECT published_at IS NOT NULL AS published FROM outbox',
            )
          ).rows,
        { timeout: 10_000, interval: 50 },
      )
      .toEqual([{ published: true }]);
  });
});
