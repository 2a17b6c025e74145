import { loadConfig, type Config } from '../config/config.js';

/**
 * What rentbridge wants of each of its topics (docs/topics.md): partitions, replicas, and the
 * topic configs that decide how long messages stay. Pure: the broker side is topic-plan.ts.
 *
 * partner.<resource> are changelogs (compacted, a tombstone after each removal, decision 024);
 * every other topic is deleted by time.
 */

/** The kinds of topic, each with its own keeping rule. */
export type TopicKind = 'changelog' | 'command' | 'outcome' | 'dead-letter' | 'unrouted';

export interface TopicSettings {
  /** KAFKA_TOPIC_PARTITIONS. */
  partitions: number;
  /** KAFKA_REPLICATION_FACTOR; unset: min(3, brokers). */
  replicationFactor?: number;
  /** KAFKA_MIN_INSYNC_REPLICAS; unset: replication factor - 1, at least 1. */
  minInsyncReplicas?: number;
  changelogMinCompactionLagMs: number;
  /** At the latest this long after it was written, a superseded or tombstoned version is compacted away. */
  changelogMaxCompactionLagMs: number;
  commandRetentionMs: number;
  outcomeRetentionMs: number;
  unroutedRetentionMs: number;
  /** Bounded: dead letters carry personal data (docs/privacy.md). */
  deadLetterRetentionMs: number;
  /** Extra topic configs by kind (tests force compaction with small segments). */
  overrides?: Partial<Record<TopicKind, Record<string, string>>>;
}

/** A topic as rentbridge wants it. */
export interface WantedTopic {
  /** Logical name, without KAFKA_TOPIC_PREFIX. */
  logical: string;
  kind: TopicKind;
  partitions: number;
  replicationFactor: number;
  /** Topic configs (Kafka names), values as the broker spells them. */
  configs: Record<string, string>;
}

const HOUR_MS = 3_600_000;

export function topicSettingsFromConfig(config: Config): TopicSettings {
  return {
    partitions: config.KAFKA_TOPIC_PARTITIONS,
    replicationFactor: config.KAFKA_REPLICATION_FACTOR,
    minInsyncReplicas: config.KAFKA_MIN_INSYNC_REPLICAS,
    changelogMinCompactionLagMs: config.KAFKA_CHANGELOG_MIN_COMPACTION_LAG_HOURS * HOUR_MS,
    changelogMaxCompactionLagMs: config.KAFKA_CHANGELOG_MAX_COMPACTION_LAG_HOURS * HOUR_MS,
    commandRetentionMs: config.KAFKA_COMMAND_RETENTION_HOURS * HOUR_MS,
    outcomeRetentionMs: config.KAFKA_OUTCOME_RETENTION_HOURS * HOUR_MS,
    unroutedRetentionMs: config.KAFKA_UNROUTED_RETENTION_HOURS * HOUR_MS,
    deadLetterRetentionMs: config.KAFKA_DLQ_RETENTION_HOURS * HOUR_MS,
  };
}

/** The settings of an unset environment (the config's defaults), with this partition count (tests, benchmarks). */
export function defaultTopicSettings(partitions: number): TopicSettings {
  return { ...topicSettingsFromConfig(loadConfig({})), partitions };
}

export function topicKind(logical: string): TopicKind {
  if (logical.endsWith('.dlq')) return 'dead-letter';
  if (logical.startsWith('partner.')) return 'changelog';
  if (logical.startsWith('commands.')) return 'command';
  if (logical.startsWith('outcomes.')) return 'outcome';
  return 'unrouted';
}

/**
 * The replication factor to create topics with. kafkajs's createTopics without one (or with -1)
 * got ONE replica on Kafka 3.9 even where the brokers' default.replication.factor was 3, so it is
 * always given: the configured one, else min(3, brokers) — one broker in development, three
 * copies on a cluster.
 */
export function replicationFactorFor(settings: TopicSettings, brokers: number): number {
  return settings.replicationFactor ?? Math.max(1, Math.min(3, brokers));
}

/** One broker down still takes acks=all writes: replication factor - 1, at least 1, unless configured. */
export function minInsyncReplicasFor(settings: TopicSettings, replicationFactor: number): number {
  return Math.min(settings.minInsyncReplicas ?? Math.max(1, replicationFactor - 1), replicationFactor);
}

export function wantedTopic(logical: string, settings: TopicSettings, brokers: number): WantedTopic {
  const kind = topicKind(logical);
  const replicationFactor = replicationFactorFor(settings, brokers);
  const configs: Record<string, string> = {
    'min.insync.replicas': String(minInsyncReplicasFor(settings, replicationFactor)),
  };
  if (kind === 'changelog') {
    configs['cleanup.policy'] = 'compact';
    // Recent history stays readable (every version, not only the latest), and a tombstone stays as
    // long: a consumer at most this far behind sees every change and every removal.
    configs['min.compaction.lag.ms'] = String(settings.changelogMinCompactionLagMs);
    configs['delete.retention.ms'] = String(settings.changelogMinCompactionLagMs);
    // And a bound: a superseded version, or a record before its tombstone (an erasure's), leaves
    // by this age, so every copy of personal data on a changelog has a date (docs/privacy.md).
    configs['max.compaction.lag.ms'] = String(settings.changelogMaxCompactionLagMs);
  } else {
    configs['cleanup.policy'] = 'delete';
    configs['retention.ms'] = String(retentionMs(kind, settings));
  }
  Object.assign(configs, settings.overrides?.[kind]);
  return { logical, kind, partitions: settings.partitions, replicationFactor, configs };
}

/** How long a message of the kind may stay on its topic at the latest (a changelog: until compacted). */
export function keptAtMostMs(kind: TopicKind, s: TopicSettings): number {
  return kind === 'changelog' ? s.changelogMaxCompactionLagMs : retentionMs(kind, s);
}

function retentionMs(kind: Exclude<TopicKind, 'changelog'>, s: TopicSettings): number {
  switch (kind) {
    case 'command':
      return s.commandRetentionMs;
    case 'outcome':
      return s.outcomeRetentionMs;
    case 'dead-letter':
      return s.deadLetterRetentionMs;
    case 'unrouted':
      return s.unroutedRetentionMs;
  }
}
