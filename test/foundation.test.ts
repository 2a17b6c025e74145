import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { createTestKafka, type TestKafka } from './support/kafka.js';

describe('the real servers', () => {
  let database: TestDatabase;
  let kafka: TestKafka;

  beforeAll(async () => {
    database = await createTestDatabase();
    kafka = createTestKafka();
    await kafka.createTopics(['inbound.unrouted']);
  });

  afterAll(async () => {
    await kafka.close();
    await database.drop();
  });

  it('writes and reads a row through Prisma on PostgreSQL', async () => {
    await database.db.auditEntry.create({ data: { actor: 'test', action: 'probe', target: 'db' } });
    const rows = await database.db.auditEntry.findMany({ where: { action: 'probe' } });
    expect(rows).toHaveLength(1);
    expect(rows[0]?.actor).toBe('test');
  });

  it('produces and consumes a message through kafkajs on the broker', async () => {
    const producer = kafka.kafka.producer({ idempotent: true });
    await producer.connect();
    await producer.send({
      topic: `${kafka.prefix}inbound.unrouted`,
      acks: -1,
      messages: [{ key: 'k1', value: 'hello' }],
    });
    await producer.disconnect();
    const [message] = await kafka.readMessages('inbound.unrouted', 1);
    expect(message?.key?.toString()).toBe('k1');
    expect(message?.value?.toString()).toBe('hello');
  });
});
