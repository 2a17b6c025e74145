/**
 * `npm run bench -- changelog` (issue 29): what a new consumer of partner.<resource> reads, on a
 * compacted changelog against the same changes on a topic deleted by time (the settings before
 * changelogs). A synthetic workload of a chaos run's shape (a few thousand records changed many
 * times each, some removed): BENCH_CHANGELOG_RECORDS records (default 2,000), each created then
 * changed BENCH_CHANGELOG_VERSIONS - 1 times (default 10 versions), one in ten removed. Written
 * through the one write path (recordChanges, tombstones included), published by the relay to both
 * topics; compaction forced on the changelog with small segments (the broker's cleaner looks every
 * 15 s). Messages and bytes (key, value, headers) read back from offset 0, as a new consumer would.
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { recordChanges, type StateChangeInput } from '../src/changes/record-changes.js';
import { withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { createDb } from '../src/db/prisma.js';
import { defaultTopicSettings } from '../src/kafka/topic-settings.js';
import { ensureTopics, topicName, TOPICS } from '../src/kafka/topics.js';
import { createLogger } from '../src/logger.js';
import { createRelay } from '../src/relay/relay.js';
import { readWholeTopic } from '../test/changelog/read-topic.js';
import { databaseBase, kafkaBrokers } from './env.js';
import type { BenchResult } from './types.js';

const RESOURCE = 'applications' as const;

export async function run(): Promise<BenchResult> {
  const records = Number(process.env.BENCH_CHANGELOG_RECORDS ?? 2000);
  const versions = Number(process.env.BENCH_CHANGELOG_VERSIONS ?? 10);
  const base = databaseBase();
  const brokers = kafkaBrokers();
  const schema = `bench_changelog_${randomBytes(4).toString('hex')}`;
  const url = withSchema(base, schema);
  await migrate(url);
  const db = createDb(url, { max: 5 });
  const logger = createLogger({ level: 'silent' });
  const kafka = new Kafka({ clientId: 'bench-changelog', brokers, logLevel: logLevel.NOTHING });
  const tag = randomBytes(3).toString('hex');
  const compacted = `bcc${tag}.`;
  const deleted = `bcd${tag}.`;
  const logical = TOPICS.partner(RESOURCE);
  const admin = kafka.admin();
  await admin.connect();
  try {
    // Compacted, with the cleaner's settings made eager only once the workload is on the topic:
    // segments rolled every 100 ms while an idempotent producer writes lose its producer state
    // (the broker then answers OUT_OF_ORDER_SEQUENCE_NUMBER), which no real setting does.
    await ensureTopics(admin, {
      prefix: compacted,
      topics: [logical],
      settings: { ...defaultTopicSettings(3), changelogMinCompactionLagMs: 0 },
    });
    // Before changelogs: kept by time, every version.
    await ensureTopics(admin, {
      prefix: deleted,
      topics: [logical],
      settings: { ...defaultTopicSettings(3), overrides: { changelog: { 'cleanup.policy': 'delete' } } },
    });

    const id = (i: number) => `app-${i}`;
    let changes = 0;
    for (let v = 0; v < versions; v++) {
      const batch: StateChangeInput[] = Array.from({ length: records }, (_, i) => ({
        resource: RESOURCE,
        record: {
          id: id(i),
          updated_at: new Date(Date.UTC(2026, 0, 1, 0, v)).toISOString(),
          status: `status-${v}`,
          note: 'x'.repeat(200),
        },
        via: 'webhook' as const,
        source: '/bench',
      }));
      for (let i = 0; i < batch.length; i += 500) {
        await db.$transaction((tx) => recordChanges(tx, batch.slice(i, i + 500)), { timeout: 60_000 });
      }
      changes += batch.length;
    }
    const removed = Array.from({ length: Math.floor(records / 10) }, (_, i) => ({
      resource: RESOURCE,
      record: { id: id(i * 10), updated_at: '2026-02-01T00:00:00Z', status: 'gone' },
      via: 'webhook' as const,
      source: '/bench',
      removed: true,
    }));
    await db.$transaction((tx) => recordChanges(tx, removed), { timeout: 60_000 });
    const rows = await db.outboxMessage.count();

    const publish = async (prefix: string) => {
      const relay = createRelay({
        db,
        kafka,
        logger,
        databaseUrl: url,
        topicPrefix: prefix,
        retentionHours: 72,
      });
      try {
        // A drain stops at its first failed send (a loaded machine's timeout): go on, a few times.
        for (let attempt = 1; ; attempt++) {
          try {
            await relay.drain();
            break;
          } catch (error) {
            if (attempt >= 5) throw error;
          }
        }
      } finally {
        await relay.stop();
      }
    };
    await publish(deleted);
    await db.$executeRawUnsafe('UPDATE outbox SET published_at = NULL');
    await publish(compacted);
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: 2, // TOPIC (kafkajs's ConfigResourceTypes, not exported to ES modules)
          name: topicName(compacted, logical),
          // AlterConfigs replaces the topic's whole set: the changelog's own settings again.
          configEntries: Object.entries({
            'cleanup.policy': 'compact',
            'min.compaction.lag.ms': '0',
            'segment.bytes': '65536',
            'segment.ms': '100',
            'min.cleanable.dirty.ratio': '0.01',
            'delete.retention.ms': '100',
            'max.compaction.lag.ms': '1000',
          }).map(([name, value]) => ({ name, value })),
        },
      ],
    });
    // A last change after segment.ms rolls the segment the workload ended in, so it can be cleaned.
    await new Promise((r) => setTimeout(r, 500));
    await db.$transaction((tx) =>
      recordChanges(tx, [
        { resource: RESOURCE, record: { id: 'marker', updated_at: 'z' }, via: 'poll', source: '/bench' },
      ]),
    );
    await publish(compacted);

    const measure = async (prefix: string) => {
      const read = await readWholeTopic(kafka, topicName(prefix, logical), 300_000);
      const bytes = read.reduce(
        (sum, { message: m }) =>
          sum +
          (m.key?.length ?? 0) +
          (m.value?.length ?? 0) +
          Object.entries(m.headers ?? {}).reduce((h, [k, v]) => h + k.length + String(v ?? '').length, 0),
        0,
      );
      return {
        messages: read.length,
        bytes,
        tombstones: read.filter((r) => r.message.value === null).length,
      };
    };
    const live = records - removed.length + 1;
    const started = Date.now();
    let after = await measure(compacted);
    // The cleaner runs every 15 s: wait until one message per key is left (or 5 minutes).
    while (after.messages > live + removed.length && Date.now() - started < 300_000) {
      await new Promise((r) => setTimeout(r, 5000));
      after = await measure(compacted);
    }
    const whole = await measure(deleted);
    return {
      name: 'changelog',
      figures: {
        records,
        versions_each: versions,
        removed: removed.length,
        live_records: live,
        outbox_rows: rows,
        changes_written: changes + removed.length,
        uncompacted_messages: whole.messages,
        uncompacted_bytes: whole.bytes,
        compacted_messages: after.messages,
        compacted_tombstones_left: after.tombstones,
        compacted_bytes: after.bytes,
        compacted_vs_uncompacted_bytes: `${((after.bytes / whole.bytes) * 100).toFixed(1)} %`,
        seconds_until_compacted: (Date.now() - started) / 1000,
      },
      notes: [
        "Synthetic workload of a chaos run's shape (records changed many times, some removed), not a chaos run: `npm run test:chaos` is too heavy for a shared 2-core machine.",
        "Bytes are what a new consumer reads from offset 0 (keys, values, headers), not the broker's disk (kafkajs has no DescribeLogDirs).",
        "Compaction forced: segment.ms 100, segment.bytes 64 KiB, min.cleanable.dirty.ratio 0.01, min.compaction.lag.ms 0 (rentbridge's default keeps 7 days whole).",
      ],
    };
  } finally {
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(compacted) || t.startsWith(deleted));
    await admin.deleteTopics({ topics: mine }).catch(() => undefined);
    await admin.disconnect();
    await db.$disconnect();
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}
