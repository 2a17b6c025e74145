import type { Admin } from 'kafkajs';
import { RESOURCES, type Resource } from '../partner/resources.js';

/** Logical topic names (README: "Topics"); KAFKA_TOPIC_PREFIX is applied by `topicName`. */
export const TOPICS = {
  partner: (resource: Resource) => `partner.${resource}`,
  applicationDecisions: 'commands.application-decisions',
  rentalPayments: 'commands.rental-payments',
  applicationDecisionOutcomes: 'outcomes.application-decisions',
  rentalPaymentOutcomes: 'outcomes.rental-payments',
  customerRegistrations: 'commands.customer-registrations',
  enrollments: 'commands.enrollments',
  customerRegistrationOutcomes: 'outcomes.customer-registrations',
  enrollmentOutcomes: 'outcomes.enrollments',
  unrouted: 'inbound.unrouted',
  dlq: (topic: string) => `${topic}.dlq`,
} as const;

export const COMMAND_TOPICS = [
  TOPICS.applicationDecisions,
  TOPICS.rentalPayments,
  TOPICS.customerRegistrations,
  TOPICS.enrollments,
] as const;

/** Every topic rentbridge uses, without prefix. */
export function allTopics(): string[] {
  return [
    ...RESOURCES.map(TOPICS.partner),
    ...COMMAND_TOPICS,
    ...COMMAND_TOPICS.map(TOPICS.dlq),
    TOPICS.applicationDecisionOutcomes,
    TOPICS.rentalPaymentOutcomes,
    TOPICS.customerRegistrationOutcomes,
    TOPICS.enrollmentOutcomes,
    TOPICS.unrouted,
  ];
}

export function topicName(prefix: string, logical: string): string {
  return `${prefix}${logical}`;
}

/** Strips the prefix from a physical topic name. */
export { logicalTopic } from '../topic-prefix.js';

/**
 * Creates the topics that do not exist yet. The broker's auto-creation is off: a topic appears
 * only here, with the partition count chosen here.
 */
export async function ensureTopics(
  admin: Admin,
  options: { prefix: string; partitions: number; topics?: string[] },
): Promise<string[]> {
  const wanted = (options.topics ?? allTopics()).map((t) => topicName(options.prefix, t));
  const existing = new Set(await admin.listTopics());
  const missing = wanted.filter((t) => !existing.has(t));
  if (missing.length === 0) return [];
  await admin.createTopics({
    waitForLeaders: true,
    topics: missing.map((topic) => ({ topic, numPartitions: options.partitions, replicationFactor: -1 })),
  });
  return missing;
}
