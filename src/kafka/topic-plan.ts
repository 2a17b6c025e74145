import type { Admin } from 'kafkajs';
import { allTopics, topicName } from './topics.js';
import { wantedTopic, type TopicSettings, type WantedTopic } from './topic-settings.js';

/**
 * Each topic's settings on the broker beside what rentbridge wants (`rentbridge topics`), and the
 * changes that bring an existing topic there without recreating it: configs are altered and
 * partitions added in place, so every message stays. A replication factor that differs is shown,
 * never changed here: that takes a partition reassignment (kafka-reassign-partitions.sh).
 */

export interface SettingRow {
  setting: string;
  current: string | null;
  wanted: string;
  differs: boolean;
  /** Why rentbridge will not change it itself, when it will not. */
  note?: string;
}

export interface TopicState {
  /** The physical name (with KAFKA_TOPIC_PREFIX). */
  topic: string;
  wanted: WantedTopic;
  exists: boolean;
  rows: SettingRow[];
}

export interface TopicPlan {
  brokers: number;
  topics: TopicState[];
}

// kafkajs's enums are not named exports of its CommonJS build under ESM: their values, as the protocol has them.
const TOPIC_RESOURCE = 2; // TOPIC_RESOURCE
const SET_ON_TOPIC = 1; // SET_ON_TOPIC

/** Reads every rentbridge topic's partitions, replicas and configs and sets them beside the wanted ones. */
export async function readTopicPlan(
  admin: Admin,
  options: { prefix: string; settings: TopicSettings; topics?: string[] },
): Promise<TopicPlan> {
  const brokers = (await admin.describeCluster()).brokers.length;
  const logical = options.topics ?? allTopics();
  const existing = new Set(await admin.listTopics());
  const names = logical.map((t) => topicName(options.prefix, t));
  const present = names.filter((n) => existing.has(n));
  const metadata = present.length ? (await admin.fetchTopicMetadata({ topics: present })).topics : [];
  const configs = present.length
    ? (
        await admin.describeConfigs({
          includeSynonyms: false,
          resources: present.map((name) => ({ type: TOPIC_RESOURCE, name })),
        })
      ).resources
    : [];
  const topics = logical.map((l, i): TopicState => {
    const topic = names[i]!;
    const wanted = wantedTopic(l, options.settings, brokers);
    if (!existing.has(topic)) {
      return {
        topic,
        wanted,
        exists: false,
        rows: [
          { setting: 'partitions', current: null, wanted: String(wanted.partitions), differs: true },
          {
            setting: 'replication.factor',
            current: null,
            wanted: String(wanted.replicationFactor),
            differs: true,
          },
          ...Object.entries(wanted.configs).map(([setting, value]) => ({
            setting,
            current: null,
            wanted: value,
            differs: true,
          })),
        ],
      };
    }
    const partitions = metadata.find((m) => m.name === topic)?.partitions ?? [];
    const replicas = Math.min(...partitions.map((p) => p.replicas.length));
    const entries = configs.find((r) => r.resourceName === topic)?.configEntries ?? [];
    const current = new Map(entries.map((e) => [e.configName, e.configValue]));
    const rows: SettingRow[] = [
      {
        setting: 'partitions',
        current: String(partitions.length),
        wanted: String(wanted.partitions),
        differs: partitions.length < wanted.partitions,
        ...(partitions.length > wanted.partitions && {
          note: 'more than wanted: Kafka cannot remove partitions (left as is)',
        }),
      },
      {
        setting: 'replication.factor',
        current: String(replicas),
        wanted: String(wanted.replicationFactor),
        differs: replicas !== wanted.replicationFactor,
        ...(replicas !== wanted.replicationFactor && {
          note: 'not altered by rentbridge: reassign partitions (kafka-reassign-partitions.sh)',
        }),
      },
      ...Object.entries(wanted.configs).map(([setting, value]) => ({
        setting,
        current: current.get(setting) ?? null,
        wanted: value,
        differs: current.get(setting) !== value,
      })),
    ];
    return { topic, wanted, exists: true, rows };
  });
  return { brokers, topics };
}

/** What `apply` would change: existing topics whose partitions or configs differ (replicas apart). */
export function pendingChanges(plan: TopicPlan): TopicState[] {
  return plan.topics.filter(
    (t) => t.exists && t.rows.some((r) => r.differs && r.setting !== 'replication.factor'),
  );
}

/**
 * Alters the existing topics in place: configs (kept with every other config set on the topic,
 * since the AlterConfigs request replaces the topic's whole set) and added partitions. Topics that
 * do not exist are left to `ensureTopics`. Answers the topics altered.
 */
export async function applyTopicPlan(admin: Admin, plan: TopicPlan): Promise<string[]> {
  const changes = pendingChanges(plan);
  if (changes.length === 0) return [];
  const described = (
    await admin.describeConfigs({
      includeSynonyms: false,
      resources: changes.map((t) => ({ type: TOPIC_RESOURCE, name: t.topic })),
    })
  ).resources;
  const resources = changes
    .filter((t) => t.rows.some((r) => r.differs && r.setting in t.wanted.configs))
    .map((t) => {
      const own = (described.find((r) => r.resourceName === t.topic)?.configEntries ?? []).filter(
        (e) => e.configSource === SET_ON_TOPIC,
      );
      const merged = new Map(own.map((e) => [e.configName, e.configValue]));
      for (const [name, value] of Object.entries(t.wanted.configs)) merged.set(name, value);
      return {
        type: TOPIC_RESOURCE,
        name: t.topic,
        configEntries: [...merged].map(([name, value]) => ({ name, value })),
      };
    });
  if (resources.length > 0) await admin.alterConfigs({ validateOnly: false, resources });
  const grow = changes.filter((t) => t.rows.some((r) => r.setting === 'partitions' && r.differs));
  if (grow.length > 0) {
    await admin.createPartitions({
      topicPartitions: grow.map((t) => ({ topic: t.topic, count: t.wanted.partitions })),
    });
  }
  return changes.map((t) => t.topic);
}

/** The plan as a table: one line per setting, `differs` where the broker's is not the wanted one. */
export function formatTopicPlan(plan: TopicPlan): string {
  const header = ['topic', 'setting', 'current', 'wanted', 'state'];
  const lines: string[][] = [];
  for (const t of plan.topics) {
    t.rows.forEach((r, i) => {
      const state = !t.exists ? 'missing' : r.differs ? 'differs' : r.note ? 'kept' : 'ok';
      lines.push([
        i === 0 ? t.topic : '',
        r.setting,
        r.current ?? '-',
        r.wanted,
        r.note ? `${state} (${r.note})` : state,
      ]);
    });
  }
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...lines.map(line)].join('\n') + '\n';
}
