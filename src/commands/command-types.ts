import { z } from 'zod';
import type { CommandKind } from '../events/outcomes.js';
import { logicalTopic } from '../kafka/topics.js';
import { applicationDecisions } from './application-decisions.js';
import type { AnyCommandType } from './command-type.js';
import { customerRegistrations } from './customer-registrations.js';
import { enrollments } from './enrollments.js';
import { rentalPayments } from './rental-payments.js';

export type { AnyCommandType, CommandType } from './command-type.js';

/**
 * THE table of command types (docs/decisions/030-command-type-table.md): one row per type, each
 * row a module of its own in src/commands/. Adding a type is one module and one row here
 * (docs/adding-a-command-type.md); everything below, and every reader of these lookups, follows.
 */
export const COMMAND_TYPE_TABLE: readonly AnyCommandType[] = [
  applicationDecisions,
  rentalPayments,
  customerRegistrations,
  enrollments,
];

function indexBy(key: (type: AnyCommandType) => string): ReadonlyMap<string, AnyCommandType> {
  const map = new Map<string, AnyCommandType>();
  for (const type of COMMAND_TYPE_TABLE) {
    // Two rows under one name would route a message to whichever came first: refuse at load.
    if (map.has(key(type))) throw new Error(`two command types share "${key(type)}"`);
    map.set(key(type), type);
  }
  return map;
}

const BY_NAME = indexBy((t) => t.name);
const BY_KIND = indexBy((t) => t.kind);
const BY_TOPIC = indexBy((t) => t.topic);
const BY_EVENT_TYPE = indexBy((t) => t.eventType);
const BY_PMS_EVENT_TYPE = indexBy((t) => t.pmsEventType);
indexBy((t) => t.idField);

/** The consumers' names (`rentbridge consumer <name>`), in table order. */
export const COMMAND_TYPE_NAMES: readonly string[] = COMMAND_TYPE_TABLE.map((t) => t.name);

export function commandTypeByName(name: string): AnyCommandType | undefined {
  return BY_NAME.get(name);
}

export function commandTypeOfKind(kind: CommandKind | string): AnyCommandType | undefined {
  return BY_KIND.get(kind);
}

/** The type whose commands travel on `logical` (a topic name without KAFKA_TOPIC_PREFIX). */
export function commandTypeOfTopic(logical: string): AnyCommandType | undefined {
  return BY_TOPIC.get(logical);
}

/** The type of a physical topic (with KAFKA_TOPIC_PREFIX), e.g. a dead letter's original topic. */
export function commandTypeOfPhysicalTopic(
  topic: string | null,
  topicPrefix: string,
): AnyCommandType | undefined {
  return topic ? BY_TOPIC.get(logicalTopic(topicPrefix, topic)) : undefined;
}

/** The type of commands whose CloudEvent `type` is `eventType`. */
export function commandTypeOfEvent(eventType: string): AnyCommandType | undefined {
  return BY_EVENT_TYPE.get(eventType);
}

/** The type a PMS webhook of `type` (`rent_payment.received`, ...) carries. */
export function commandTypeOfPmsEvent(type: string): AnyCommandType | undefined {
  return BY_PMS_EVENT_TYPE.get(type);
}

/** The PMS webhook body that carries a command of `type`: `{ type, data: <command> }`. */
export function pmsEventSchemaOf(type: AnyCommandType) {
  return z.looseObject({ type: z.literal(type.pmsEventType), data: type.schema });
}
