import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { commitStored } from '../../src/kafka/commit-stored.js';
import { createKafka } from '../../src/kafka/kafka.js';
import { PRODUCE_REQUEST } from '../../src/kafka/kafka-client-settings.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { defaultTopicSettings } from '../../src/kafka/topic-settings.js';
import { createLogger } from '../../src/logger.js';
import { ROOT } from '../support/cli.js';

/**
 * Issue 53, on the three-broker cluster of `scripts/kafka.sh cluster`: the broker that is a consumer
 * group's coordinator is killed. The group's coordination moves to another broker once the
 * controller fences the dead one; a member must follow it, keep its membership and go on
 * consuming and committing. kafkajs (2.2.4) sent the member's heartbeats and commits to the lost
 * broker until its retries ran out, so the new coordinator dropped the member after a session
 * time-out and the consumer crashed and rejoined (a gap of seconds in every flow whose group was
 * coordinated there), and it rejoined the group when the new coordinator, still loading the group,
 * answered NOT_COORDINATOR; our patch (patches/kafkajs+2.2.4.patch) looks the coordinator up again.
 *
 * Checked through the cluster, as an outside client would: the group as its new coordinator
 * describes it, the committed offsets, the consumer's own events. Runs by `npm run test:cluster`.
 */
const BROKERS = (process.env.RENTBRIDGE_CLUSTER_BROKERS ?? '').split(',').filter(Boolean);
const run$ = promisify(execFile);
const cluster = (...args: string[]) =>
  run$('bash', [`${ROOT}scripts/kafka.sh`, 'cluster', ...args], { timeout: 600_000 });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The session time-out of rentbridge's consumers (KAFKA_SESSION_TIMEOUT_MS's default). */
const SESSION_MS = 6000;

/** Java's String.hashCode, as Kafka uses it to place a group on a partition of __consumer_offsets. */
function javaHash(s: string): number {
  let h = 0;
  for (const ch of s) h = (Math.imul(31, h) + ch.charCodeAt(0)) | 0;
  return h;
}

describe.skipIf(BROKERS.length !== 3)('a consumer whose group coordinator is killed', () => {
  const reader = new Kafka({ clientId: 'coordinator-test', brokers: BROKERS, logLevel: logLevel.NOTHING });
  let killed: string | null = null;

  afterAll(async () => {
    if (killed) await cluster('revive', killed);
  }, 600_000);

  it('keeps its membership, its flow and its commits', async () => {
    const topic = `coord${randomBytes(3).toString('hex')}.events`;
    const admin = reader.admin();
    await admin.connect();
    await ensureTopics(admin, { prefix: '', topics: [topic], settings: defaultTopicSettings(3) });
    // A group whose coordinator is broker 1, 2 or 3: the leader of its __consumer_offsets partition.
    // On a new cluster that topic is made by the first group lookup (any group's) and its partitions
    // then elect leaders: looked up once, then waited for.
    await admin.describeGroups(['coord-first-lookup']);
    const offsetsTopic = await vi.waitFor(
      async () => {
        const [t] = (await admin.fetchTopicMetadata({ topics: ['__consumer_offsets'] })).topics;
        expect(t!.partitions.length).toBeGreaterThan(0);
        expect(t!.partitions.every((p) => [1, 2, 3].includes(p.leader))).toBe(true);
        return t!;
      },
      { timeout: 60_000, interval: 500 },
    );
    const leaders = new Map(offsetsTopic.partitions.map((p) => [p.partitionId, p.leader]));
    const groupId = `coord-${randomBytes(4).toString('hex')}`;
    const hash = javaHash(groupId);
    const coordinator = leaders.get((hash === -2147483648 ? 0 : Math.abs(hash)) % leaders.size)!;
    expect([1, 2, 3]).toContain(coordinator);

    const log = createLogger({ level: 'silent' });
    const kafka = createKafka({ brokers: BROKERS, clientId: 'coordinator-test', logger: log });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const consumer = kafka.consumer({ groupId });
    const joins: string[] = [];
    const crashes: string[] = [];
    consumer.on(consumer.events.GROUP_JOIN, (e) => joins.push(e.payload.memberId));
    consumer.on(consumer.events.CRASH, (e) => crashes.push(e.payload.error.message));
    const seen = new Set<string>();
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    // As rentbridge's consumers do: offsets committed after each batch is stored, a refused commit
    // logged (commitStored), no kafkajs auto-commit.
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, heartbeat }) => {
        for (const m of batch.messages) seen.add(m.value!.toString());
        const offset = String(BigInt(batch.lastOffset()) + 1n);
        await commitStored(consumer, [{ topic, partition: batch.partition, offset }], log);
        await heartbeat();
      },
    });

    const sent: string[] = [];
    let sending = true;
    const sender = (async () => {
      for (let n = 0; sending; n++) {
        const value = `m${n}`;
        await producer.send({ topic, messages: [{ key: value, value }], ...PRODUCE_REQUEST });
        sent.push(value);
        await sleep(100);
      }
    })();
    await expect.poll(() => seen.size, { timeout: 60_000 }).toBeGreaterThan(10);
    expect(joins).toHaveLength(1);

    killed = String(coordinator);
    await cluster('kill', killed);
    // Past the fencing (3 s on the test cluster) and a whole session time-out after it: a member
    // the new coordinator never heard from is out of the group by then.
    await sleep(3000 + 2 * SESSION_MS);
    sending = false;
    await sender;

    const [group] = (await admin.describeGroups([groupId])).groups;
    expect(group!.state).toBe('Stable');
    expect(group!.members.map((m) => m.memberId)).toEqual([joins[0]]);
    await expect.poll(() => sent.filter((v) => !seen.has(v)), { timeout: 30_000 }).toEqual([]);
    const ends = await admin.fetchTopicOffsets(topic);
    await expect
      .poll(async () => (await admin.fetchOffsets({ groupId, topics: [topic] }))[0]!.partitions, {
        timeout: 30_000,
      })
      .toEqual(
        expect.arrayContaining(ends.map((e) => ({ partition: e.partition, offset: e.high, metadata: null }))),
      );
    expect(crashes).toEqual([]);
    expect(joins).toHaveLength(1);

    await consumer.disconnect();
    await producer.disconnect();
    await admin.disconnect();
    await cluster('revive', killed);
    killed = null;
  }, 600_000);
});
