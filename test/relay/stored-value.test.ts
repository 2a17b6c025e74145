import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { insertOutboxRows } from '../../src/outbox/outbox-repository.js';
import { TOPICS } from '../../src/kafka/topics.js';

const TOPIC = TOPICS.partner('applications');
import { useRelayFixture } from './relay-fixture.js';

/**
 * The message an outbox row becomes is built when the row is written (`message_value`), and the
 * relay sends those very bytes; a row written before values were stored (none) is built at send
 * time into the same CloudEvent, its `time` the row's `created_at`.
 */
describe('stored message values', () => {
  const fx = useRelayFixture({
    topics: [TOPIC],
    acmeSecret: `whsec_${randomBytes(24).toString('base64')}`,
  });

  it('sends the stored bytes, and builds the message of a row written without them', async () => {
    const db = fx.database.db;
    const data = { id: 'app-stored', status: 'approved', note: 'é ✓' };
    const [stored] = await db.$transaction((tx) =>
      insertOutboxRows(tx, [
        {
          topic: TOPIC,
          key: 'app-stored',
          type: 'partner.application.updated',
          source: '/poller/applications',
          subject: 'app-stored',
          data,
          headers: { 'partner-request-id': 'req_stored' },
        },
      ]),
    );
    const [row] = await db.$queryRaw<{ message_value: Uint8Array | null; created_at: Date }[]>`
      SELECT message_value, created_at FROM outbox WHERE id = ${stored!.id}`;
    expect(row!.message_value).not.toBeNull();
    const storedBytes = Buffer.from(row!.message_value!);
    expect(JSON.parse(storedBytes.toString())).toMatchObject({
      specversion: '1.0',
      id: stored!.eventId,
      time: row!.created_at.toISOString(),
      data,
    });

    const olderId = randomUUID();
    await db.$executeRaw`
      INSERT INTO outbox (event_id, topic, key, type, source, subject, data, headers, created_at)
      VALUES (${olderId}::uuid, ${TOPIC}, 'app-older', 'partner.application.updated',
              '/poller/applications', 'app-older', ${JSON.stringify({ id: 'app-older' })}::jsonb,
              '{}'::jsonb, '2026-11-01T10:00:00.123Z')`;

    await fx.relay().drain();
    const messages = await fx.kafka.readMessages(TOPIC, 2);
    const byKey = new Map(messages.map((m) => [m.key!.toString(), m]));
    expect(byKey.get('app-stored')!.value!.equals(storedBytes)).toBe(true);
    expect(byKey.get('app-stored')!.headers!.ce_id!.toString()).toBe(stored!.eventId);
    expect(byKey.get('app-stored')!.headers!['partner-request-id']!.toString()).toBe('req_stored');
    expect(JSON.parse(byKey.get('app-older')!.value!.toString())).toMatchObject({
      id: olderId,
      time: '2026-11-01T10:00:00.123Z',
      data: { id: 'app-older' },
    });
    expect(byKey.get('app-older')!.headers!.ce_type!.toString()).toBe('partner.application.updated');
  });
});
