import type { Admin, Kafka } from 'kafkajs';
import {
  APPLICATION_DECISION,
  commandContracts,
  CUSTOMER_REGISTRATION,
  ENROLLMENT,
  RENTAL_PAYMENT,
} from '../contracts/command-contracts.js';
import { RESOURCES, type Resource } from '../partner/resources.js';
import { defaultTopicSettings, wantedTopic, type TopicSettings } from './topic-settings.js';

/** Logical topic names (docs/topics.md); KAFKA_TOPIC_PREFIX is applied by `topicName`. */
export const TOPICS = {
  partner: (resource: Resource) => `partner.${resource}`,
  // The four built-in command types' topics, by name (the list is command-contracts.ts's).
  applicationDecisions: APPLICATION_DECISION.topic,
  rentalPayments: RENTAL_PAYMENT.topic,
  applicationDecisionOutcomes: APPLICATION_DECISION.outcomeTopic,
  rentalPaymentOutcomes: RENTAL_PAYMENT.outcomeTopic,
  customerRegistrations: CUSTOMER_REGISTRATION.topic,
  enrollments: ENROLLMENT.topic,
  customerRegistrationOutcomes: CUSTOMER_REGISTRATION.outcomeTopic,
  enrollmentOutcomes: ENROLLMENT.outcomeTopic,
  unrouted: 'inbound.unrouted',
  /** A report per reconciliation run (issue 45). */
  reconciliationReports: 'reconciliation.reports',
  dlq: (topic: string) => `${topic}.dlq`,
} as const;

/** Every command type's command topic and outcome topic (logical names). */
export const COMMAND_TOPICS: readonly string[] = commandContracts().map((c) => c.topic);
export const OUTCOME_TOPICS: readonly string[] = commandContracts().map((c) => c.outcomeTopic);

/** Every topic rentbridge uses, without prefix. */
export function allTopics(): string[] {
  return [
    ...RESOURCES.map(TOPICS.partner),
    ...COMMAND_TOPICS,
    ...COMMAND_TOPICS.map(TOPICS.dlq),
    ...OUTCOME_TOPICS,
    TOPICS.unrouted,
    TOPICS.reconciliationReports,
  ];
}

export function topicName(prefix: string, logical: string): string {
  return `${prefix}${logical}`;
}

/** Strips the prefix from a physical topic name. */
export { logicalTopic } from '../topic-prefix.js';

/**
 * Creates the topics that do not exist yet, with the settings of topic-settings.ts (replicas,
 * min.insync.replicas, compaction or retention). The broker's auto-creation is off: a topic
 * appears only here. Existing topics are not changed here: `rentbridge topics --apply` does that.
 */
export async function ensureTopics(
  admin: Admin,
  options: {
    prefix: string;
    topics?: string[];
    /**
     * A client that talks to one broker only: when given, the call returns once every broker of
     * the cluster knows every new topic and its partitions' leaders (see `waitForTopicMetadata`).
     */
    kafkaFor?: (broker: string) => Kafka;
  } & (
    | { settings: TopicSettings }
    /** The default settings (topic-settings.ts) with this partition count. */
    | { partitions: number }
  ),
): Promise<string[]> {
  const settings = 'settings' in options ? options.settings : defaultTopicSettings(options.partitions);
  const logical = options.topics ?? allTopics();
  const existing = new Set(await admin.listTopics());
  const missing = logical.filter((t) => !existing.has(topicName(options.prefix, t)));
  if (missing.length === 0) return [];
  const brokers = (await admin.describeCluster()).brokers.length;
  await admin.createTopics({
    // kafkajs's own wait gives up on UNKNOWN_TOPIC_OR_PARTITION, which a busy broker answers for a
    // moment after creating a topic: waited for below instead, retrying any answer until a deadline.
    waitForLeaders: false,
    topics: missing.map((t) => {
      const wanted = wantedTopic(t, settings, brokers);
      return {
        topic: topicName(options.prefix, t),
        numPartitions: wanted.partitions,
        // Always explicit: without it kafkajs got one replica on Kafka 3.9 (topic-settings.ts).
        replicationFactor: wanted.replicationFactor,
        configEntries: Object.entries(wanted.configs).map(([name, value]) => ({ name, value })),
      };
    }),
  });
  const created = missing.map((t) => topicName(options.prefix, t));
  await waitForLeaders(admin, created);
  if (options.kafkaFor) await waitForTopicMetadata(admin, options.kafkaFor, created);
  return created;
}

/**
 * Waits until every partition of `topics` has a leader that serves it, whatever the broker answers
 * meanwhile. Metadata naming a leader is not enough: for a moment after that the leader still
 * answers NOT_LEADER_OR_FOLLOWER to ListOffsets (a test's first offsets read failed so in CI), so
 * the wait ends only when every topic's offsets can be read.
 */
async function waitForLeaders(admin: Admin, topics: string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const led = await admin
      .fetchTopicMetadata({ topics })
      .then((m) => m.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)))
      .then(async (named) => {
        if (named) await Promise.all(topics.map((t) => admin.fetchTopicOffsets(t)));
        return named;
      })
      .catch(() => false);
    if (led) return;
    if (Date.now() > deadline)
      throw new Error(`topics without leaders after ${timeoutMs} ms: ${topics.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Waits until every broker answers metadata for every one of `topics` with a leader for each
 * partition. `createTopics` returns when the controller has them; the other brokers learn of them
 * a little later, and a producer or consumer that asks one of those first gets
 * UNKNOWN_TOPIC_OR_PARTITION (on a fresh three-broker cluster `start` exited so in 2 of 4 runs).
 */
export async function waitForTopicMetadata(
  admin: Admin,
  kafkaFor: (broker: string) => Kafka,
  topics: string[],
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const { brokers } = await admin.describeCluster();
  for (const { host, port } of brokers) {
    const one = kafkaFor(`${host}:${port}`).admin();
    await one.connect();
    try {
      for (;;) {
        const settled = await one
          .fetchTopicMetadata({ topics })
          .then((m) =>
            m.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)),
          )
          .catch(() => false);
        if (settled) break;
        if (Date.now() > deadline) {
          throw new Error(
            `topics not known to broker ${host}:${port} after ${timeoutMs} ms: ${topics.join(', ')}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await one.disconnect().catch(() => undefined);
    }
  }
}
