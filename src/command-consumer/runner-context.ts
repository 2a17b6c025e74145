import type { KafkaMessage } from 'kafkajs';
import type { AnyCommandType } from '../commands/command-type.js';
import { TOPICS, topicName } from '../kafka/topics.js';

/**
 * What every part of one command consumer shares: its command type (a row of the table,
 * src/commands/command-types.ts) and the physical names it reads and writes.
 */
export interface Destinations {
  type: AnyCommandType;
  /** KAFKA_TOPIC_PREFIX, for follow-up commands' topics. */
  topicPrefix: string;
  groupId: string;
  /** Physical topic names (with KAFKA_TOPIC_PREFIX). */
  topic: string;
  outcomeTopic: string;
  dlqTopic: string;
}

export function destinationsOf(type: AnyCommandType, topicPrefix: string, groupId: string): Destinations {
  return {
    type,
    topicPrefix,
    groupId,
    topic: topicName(topicPrefix, type.topic),
    outcomeTopic: topicName(topicPrefix, type.outcomeTopic),
    dlqTopic: topicName(topicPrefix, TOPICS.dlq(type.topic)),
  };
}

/** The message a command came in: where it was, for its dead letter and its outcome's ids. */
export interface Origin {
  partition: number;
  message: KafkaMessage;
}

/** Whom a command acts for: its identity's source, its CloudEvent source, and which key acts. */
export interface Acting {
  source: string;
  ceSource: string;
  key: 'own' | 'deployment';
}
