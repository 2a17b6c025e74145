import { execFileSync } from 'node:child_process';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { recordChanges } from '../../src/changes/record-changes.js';
import { readTopicPlan } from '../../src/kafka/topic-plan.js';
import { defaultTopicSettings } from '../../src/kafka/topic-settings.js';
import { ensureTopics, topicName, TOPICS } from '../../src/kafka/topics.js';
import { createLogger } from '../../src/logger.js';
import { relayProgressCheck } from '../../src/readiness.js';
import { createRelay, type Relay } from '../../src/relay/relay.js';
import { ROOT } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { readWholeTopic } from '../changelog/read-topic.js';

/**
 * On the three-broker KRaft cluster of `scripts/kafka.sh cluster` (brokers 19092-19094, its own
 * controller): topics made with rentbridge's settings get 3 replicas and min.insync.replicas 2, so
 * one broker down loses nothing acknowledged and the flow goes on; two down stop the relay (acks=all
 * cannot be met), readiness says so, and nothing is lost when they come back.
 * Runs only where RENTBRIDGE_CLUSTER_BROKERS names the cluster (it kills and revives brokers);
 * KAFKA_CLUSTER_DIR or KAFKA_DIR say where `scripts/kafka.sh cluster start` put it, as for the script.
 *
 * Known failure on main (issue 29's finding, for the relay's rewrite, issue 33): with two brokers
 * down, the relay's sendBatch waits inside kafkajs's retries and, once they are back, resolves with
 * the result of ONE partition only; the messages of the other partitions are never written, yet
 * the rows are marked published (reproduced with a bare kafkajs producer: kafkajs issue #1303).
 */
const BROKERS = process.env.RENTBRIDGE_CLUSTER_BROKERS;
const cluster = (...args: string[]) =>
  execFileSync('bash', [`${ROOT}scripts/kafka.sh`, 'cluster', ...args], { stdio: 'pipe', timeout: 120_000 });

describe.skipIf(!BROKERS)('a three-broker cluster', () => {
  let database: TestDatabase;
  let kafka: Kafka;
  let relay: Relay;
  const prefix = `c${Math.random().toString(36).slice(2, 8)}.`;
  const resource = 'applications' as const;
  const topic = () => topicName(prefix, TOPICS.partner(resource));
  let n = 0;

  async function write(count: number): Promise<void> {
    const batch = Array.from({ length: count }, () => {
      n += 1;
      return {
        resource,
        record: { id: `a${n}`, updated_at: '2026-01-01T00:00:00Z' },
        via: 'poll' as const,
        source: '/test',
      };
    });
    await database.db.$transaction((tx) => recordChanges(tx, batch));
  }
  const unpublished = () => database.db.outboxMessage.count({ where: { publishedAt: null } });

  beforeAll(async () => {
    database = await createTestDatabase();
    kafka = new Kafka({ clientId: 'cluster-test', brokers: BROKERS!.split(','), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, {
      prefix,
      topics: [TOPICS.partner(resource)],
      settings: defaultTopicSettings(3),
    });
    const plan = await readTopicPlan(admin, {
      prefix,
      topics: [TOPICS.partner(resource)],
      settings: defaultTopicSettings(3),
    });
    await admin.disconnect();
    // No replication factor configured: min(3, brokers) = 3, min.insync.replicas 2.
    const rows = Object.fromEntries(plan.topics[0]!.rows.map((r) => [r.setting, r.current]));
    expect(rows).toMatchObject({ 'replication.factor': '3', 'min.insync.replicas': '2' });
    relay = createRelay({
      db: database.db,
      kafka,
      logger: createLogger({ level: process.env.RELAY_LOG ?? 'silent' }),
      databaseUrl: database.url,
      topicPrefix: prefix,
      retentionHours: 72,
      sweepMs: 200,
      maxBackoffMs: 1000,
    });
    await relay.start();
  }, 120_000);
  afterAll(async () => {
    for (const b of ['2', '3']) cluster('revive', b);
    await relay?.stop();
    await database?.drop();
  }, 180_000);

  it('with one broker killed mid-run, loses nothing acknowledged and goes on', async () => {
    await write(200);
    cluster('kill', '2');
    for (let i = 0; i < 10; i++) {
      await write(20);
      await new Promise((r) => setTimeout(r, 200));
    }
    await vi.waitFor(async () => expect(await unpublished()).toBe(0), { timeout: 90_000, interval: 500 });
    cluster('revive', '2');
    const read = await readWholeTopic(kafka, topic());
    expect(new Set(read.map((r) => r.message.key!.toString())).size).toBe(n);
  }, 240_000);

  it('with two brokers killed, stops publishing and readiness says why; nothing lost when they return', async () => {
    cluster('kill', '2');
    cluster('kill', '3');
    const before = n;
    await write(100);
    await new Promise((r) => setTimeout(r, 5000));
    expect(await unpublished()).toBe(100);
    const ready = await relayProgressCheck(database.db, 3);
    expect(ready).toMatch(/not making progress: the oldest unpublished outbox row is \d+ s old/);
    cluster('revive', '2');
    cluster('revive', '3');
    await vi.waitFor(async () => expect(await unpublished()).toBe(0), { timeout: 120_000, interval: 1000 });
    expect(await relayProgressCheck(database.db, 3)).toBe(true);
    let keys = new Set<string>();
    await vi.waitFor(
      async () => {
        const read = await readWholeTopic(kafka, topic());
        keys = new Set(read.map((r) => r.message.key!.toString()));
        const missing = Array.from({ length: n }, (_, i) => `a${i + 1}`).filter((k) => !keys.has(k));
        expect(missing, `published (acknowledged) but not on the topic`).toEqual([]);
        expect(keys.size).toBe(n);
      },
      { timeout: 60_000, interval: 3000 },
    );
    for (let i = before + 1; i <= n; i++) expect(keys.has(`a${i}`)).toBe(true);
  }, 300_000);
});
