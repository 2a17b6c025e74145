import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topicName, TOPICS } from '../../src/kafka/topics.js';
import { runCli } from '../support/cli.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { readWholeTopic } from '../changelog/read-topic.js';

/**
 * `rentbridge topics` on the real broker, against topics made as rentbridge made them before
 * (broker defaults, one partition): the dry run shows the differences and changes nothing;
 * --apply alters them in place, every message kept.
 */
describe('rentbridge topics', () => {
  let kafka: TestKafka;
  const changelog = () => topicName(kafka.prefix, TOPICS.partner('applications'));
  const commands = () => topicName(kafka.prefix, TOPICS.rentalPayments);
  const env = () => ({
    KAFKA_BROKERS: kafka.brokers.join(','),
    KAFKA_TOPIC_PREFIX: kafka.prefix,
    LOG_LEVEL: 'warn',
  });

  beforeAll(async () => {
    kafka = createTestKafka();
    const admin = kafka.kafka.admin();
    await admin.connect();
    // The old way: no replication factor, no configs; plus a config an operator set by hand.
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic: changelog(), numPartitions: 1, replicationFactor: -1 },
        {
          topic: commands(),
          numPartitions: 1,
          replicationFactor: -1,
          configEntries: [{ name: 'max.message.bytes', value: '2000000' }],
        },
      ],
    });
    await admin.disconnect();
    const producer = kafka.kafka.producer();
    await producer.connect();
    for (const topic of [changelog(), commands()]) {
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })),
      });
    }
    await producer.disconnect();
  }, 60_000);
  afterAll(async () => {
    const admin = kafka.kafka.admin();
    await admin.connect();
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(kafka.prefix));
    await admin.deleteTopics({ topics: mine }).catch(() => undefined);
    await admin.disconnect();
    await kafka.close();
  });

  async function configsOf(topic: string): Promise<Record<string, string>> {
    const admin = kafka.kafka.admin();
    await admin.connect();
    try {
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: 2, name: topic }],
      });
      return Object.fromEntries(
        (resources[0]?.configEntries ?? []).map((e) => [e.configName, e.configValue]),
      );
    } finally {
      await admin.disconnect();
    }
  }

  describe('when run without --apply', () => {
    it('prints each setting beside the wanted one, says where they differ, and changes nothing', async () => {
      const result = await runCli(['topics'], env());
      expect(result.code, result.stderr).toBe(0);
      const lines = result.stdout.split('\n');
      const at = lines.findIndex((l) => l.startsWith(changelog()));
      const block = lines.slice(at, at + 6).join('\n');
      expect(block).toMatch(/partitions\s+1\s+3\s+differs/);
      expect(block).toMatch(/cleanup\.policy\s+delete\s+compact\s+differs/);
      expect(block).toMatch(/min\.compaction\.lag\.ms\s+0\s+604800000\s+differs/);
      expect(result.stdout).toMatch(
        /dry run \(\d+ broker\(s\)\): 27 topic\(s\) to create, 2 to alter in place/,
      );
      expect((await configsOf(changelog()))['cleanup.policy']).toBe('delete');
    }, 60_000);
  });

  describe('when run with --apply', () => {
    it('alters the topics in place: settings as wanted, every message kept, hand-set configs kept', async () => {
      const result = await runCli(['topics', '--apply'], env());
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/applied: 27 topic\(s\) created, 2 altered in place/);
      const changed = await configsOf(changelog());
      expect(changed).toMatchObject({ 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '604800000' });
      const command = await configsOf(commands());
      expect(command).toMatchObject({ 'retention.ms': '604800000', 'max.message.bytes': '2000000' });
      for (const topic of [changelog(), commands()]) {
        const read = await readWholeTopic(kafka.kafka, topic);
        expect(read.map((r) => r.message.value?.toString()).sort()).toEqual(
          Array.from({ length: 50 }, (_, i) => `v${i}`).sort(),
        );
      }
      const again = await runCli(['topics'], env());
      expect(again.stdout).toMatch(/0 topic\(s\) to create, 0 to alter in place/);
      expect(again.stdout).not.toMatch(/ differs/);
    }, 60_000);
  });
});
