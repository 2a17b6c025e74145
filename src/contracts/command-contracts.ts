import { z, type ZodType } from 'zod';
import {
  applicationDecisionCommandSchema,
  customerRegistrationCommandSchema,
  enrollmentCommandSchema,
  registrationKey,
  rentalPaymentCommandSchema,
  type ApplicationDecisionCommand,
  type CustomerRegistrationCommand,
  type EnrollmentCommand,
  type RentalPaymentCommand,
} from './commands.js';
import { logicalTopic } from '../topic-prefix.js';

/**
 * THE list of command types (docs/decisions/040-the-house-made-plain.md): every public name a
 * type has on every contract, in one entry. The topics rentbridge creates, the outcome schema's
 * `command_type`, the CloudEvent and PMS event types, the outcome topics callbacks read, the roles
 * whose heartbeats the console expects, the console's filters (`GET /ops/api/filters`) and the
 * CLI's help are all derived from this list; nothing else names a type. What a type DOES (its
 * read-back, check and follow-up) is its folder under src/command-types/ (the consumer's side).
 */
export interface CommandContract<C = unknown> {
  /** `command_type` of its identity and outcome (snake_case). */
  kind: string;
  /** The consumer: `rentbridge consumer <name>`, group `rentbridge.<name>`, role `consumer:<name>`. */
  name: string;
  /** The `type` of the PMS webhook (`POST /webhooks/pms/:source`) that carries one. */
  pmsEventType: string;
  /** Logical topics (without KAFKA_TOPIC_PREFIX): commands, and their outcomes. */
  topic: string;
  outcomeTopic: string;
  /** The CloudEvent `type` of its commands and of its outcomes. */
  eventType: string;
  outcomeType: string;
  /** The command as the CloudEvent's `data` (the PMS webhook's `data` too). */
  schema: ZodType<C>;
  /** The field that holds the command's own id (with source and kind, its identity). */
  idField: keyof C & string;
  /**
   * The field that names the record the command is about: its Kafka key and guard target. A
   * `normalize`d target (a registration's e-mail, lower-cased) keeps one record's commands on one
   * partition however the PMS spelled it.
   */
  target: { field: keyof C & string; normalize?: (value: string) => string };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- entries of four command shapes
export type AnyCommandContract = CommandContract<any>;

export const APPLICATION_DECISION = {
  kind: 'application_decision',
  name: 'application-decisions',
  pmsEventType: 'application.decided',
  topic: 'commands.application-decisions',
  outcomeTopic: 'outcomes.application-decisions',
  eventType: 'rentbridge.command.application-decision',
  outcomeType: 'rentbridge.outcome.application-decision',
  schema: applicationDecisionCommandSchema,
  idField: 'decision_id',
  target: { field: 'application_id' },
} as const satisfies CommandContract<ApplicationDecisionCommand>;

export const RENTAL_PAYMENT = {
  kind: 'rental_payment',
  name: 'rental-payments',
  pmsEventType: 'rent_payment.received',
  topic: 'commands.rental-payments',
  outcomeTopic: 'outcomes.rental-payments',
  eventType: 'rentbridge.command.rental-payment',
  outcomeType: 'rentbridge.outcome.rental-payment',
  schema: rentalPaymentCommandSchema,
  idField: 'payment_id',
  target: { field: 'enrollment_id' },
} as const satisfies CommandContract<RentalPaymentCommand>;

export const CUSTOMER_REGISTRATION = {
  kind: 'customer_registration',
  name: 'customer-registrations',
  pmsEventType: 'customer.registration_requested',
  topic: 'commands.customer-registrations',
  outcomeTopic: 'outcomes.customer-registrations',
  eventType: 'rentbridge.command.customer-registration',
  outcomeType: 'rentbridge.outcome.customer-registration',
  schema: customerRegistrationCommandSchema,
  idField: 'registration_id',
  // The customer has no id yet: its e-mail, lower-cased, is what the Partner API keeps unique,
  // so two registrations of one e-mail run in order on one partition.
  target: { field: 'email', normalize: (email: string) => registrationKey({ email }) },
} as const satisfies CommandContract<CustomerRegistrationCommand>;

export const ENROLLMENT = {
  kind: 'enrollment',
  name: 'enrollments',
  pmsEventType: 'enrollment.requested',
  topic: 'commands.enrollments',
  outcomeTopic: 'outcomes.enrollments',
  eventType: 'rentbridge.command.enrollment',
  outcomeType: 'rentbridge.outcome.enrollment',
  schema: enrollmentCommandSchema,
  idField: 'enrollment_request_id',
  target: { field: 'customer_id' },
} as const satisfies CommandContract<EnrollmentCommand>;

const BUILT_IN = [APPLICATION_DECISION, RENTAL_PAYMENT, CUSTOMER_REGISTRATION, ENROLLMENT] as const;

/** CloudEvent types of the four built-in types' commands. */
export const COMMAND_TYPES = {
  applicationDecision: APPLICATION_DECISION.eventType,
  rentalPayment: RENTAL_PAYMENT.eventType,
  customerRegistration: CUSTOMER_REGISTRATION.eventType,
  enrollment: ENROLLMENT.eventType,
} as const;

/** The `type` of the PMS webhooks that carry the four built-in types' commands. */
export const PMS_EVENT_TYPES = {
  rentPaymentReceived: RENTAL_PAYMENT.pmsEventType,
  applicationDecided: APPLICATION_DECISION.pmsEventType,
  customerRegistrationRequested: CUSTOMER_REGISTRATION.pmsEventType,
  enrollmentRequested: ENROLLMENT.pmsEventType,
} as const;

/** A `command_type`: one of the four rentbridge ships with, or a registered type's. */
export type CommandKind = (typeof BUILT_IN)[number]['kind'] | (string & {});

const registered: AnyCommandContract[] = [];
let read = false;

/**
 * Adds a command type to the list: for an extension (and the test that proves one entry is
 * enough, test/command-types/fifth-type.test.ts). Only before anything has read the list: the lists
 * derived from it are made once, when their modules load.
 */
export function registerCommandContract(contract: AnyCommandContract): void {
  if (read) throw new Error(`command type ${contract.kind}: registered after the list was read`);
  registered.push(contract);
}

/** Every command type, in order: the four rentbridge ships with, then any registered. */
export function commandContracts(): readonly AnyCommandContract[] {
  read = true;
  return [...BUILT_IN, ...registered];
}

let indexes: Record<
  'name' | 'kind' | 'topic' | 'eventType' | 'pmsEventType',
  Map<string, AnyCommandContract>
>;

function index(key: keyof typeof indexes, value: string): AnyCommandContract | undefined {
  indexes ??= {
    name: indexBy((c) => c.name),
    kind: indexBy((c) => c.kind),
    topic: indexBy((c) => c.topic),
    eventType: indexBy((c) => c.eventType),
    pmsEventType: indexBy((c) => c.pmsEventType),
  };
  return indexes[key].get(value);
}

function indexBy(key: (c: AnyCommandContract) => string): Map<string, AnyCommandContract> {
  const map = new Map<string, AnyCommandContract>();
  for (const contract of commandContracts()) {
    // Two entries under one name would route a message to whichever came first: refuse.
    if (map.has(key(contract))) throw new Error(`two command types share "${key(contract)}"`);
    map.set(key(contract), contract);
  }
  return map;
}

export const contractByName = (name: string) => index('name', name);
export const contractOfKind = (kind: string) => index('kind', kind);
/** The type whose commands travel on `logical` (a topic name without KAFKA_TOPIC_PREFIX). */
export const contractOfTopic = (logical: string) => index('topic', logical);
/** The type of commands whose CloudEvent `type` is `eventType`. */
export const contractOfEvent = (eventType: string) => index('eventType', eventType);
/** The type a PMS webhook of `type` (`rent_payment.received`, ...) carries. */
export const contractOfPmsEvent = (type: string) => index('pmsEventType', type);

/** The type of a physical topic (with KAFKA_TOPIC_PREFIX), e.g. a dead letter's original topic. */
export function contractOfPhysicalTopic(topic: string | null, topicPrefix: string) {
  return topic ? contractOfTopic(logicalTopic(topicPrefix, topic)) : undefined;
}

/** The PMS webhook body that carries a command of `type`: `{ type, data: <command> }`. */
export function pmsEventSchemaOf(contract: AnyCommandContract) {
  return z.looseObject({ type: z.literal(contract.pmsEventType), data: contract.schema });
}

/** An id or target as the text the guard keys on: ids given as numbers become their decimal text. */
function asText(value: unknown): string | null {
  if (typeof value === 'string' && value !== '') return value;
  return typeof value === 'number' ? String(value) : null;
}

/** The command's own id, read from the field its type declares. */
export function commandIdOf<C>(contract: CommandContract<C>, command: C): string {
  return String(command[contract.idField]);
}

/** The record the command is about (its Kafka key and guard target). */
export function targetIdOf<C>(contract: CommandContract<C>, command: C): string {
  const value = String(command[contract.target.field]);
  return contract.target.normalize ? contract.target.normalize(value) : value;
}

/**
 * Best effort, for data that failed its schema (an invalid message, a dead letter's value): the
 * id and target the type's fields hold, when they hold text or a number.
 */
export function looseIdsOf(
  contract: AnyCommandContract,
  data: Record<string, unknown>,
): { commandId: string | null; targetId: string | null } {
  const commandId = typeof data[contract.idField] === 'string' ? asText(data[contract.idField]) : null;
  const target = asText(data[contract.target.field]);
  return {
    commandId,
    targetId: target != null && contract.target.normalize ? contract.target.normalize(target) : target,
  };
}

/**
 * A command is its identity: source + command type + command id (issue 35). A PMS numbers its
 * decisions and its payments apart (decision #42 and payment #42 are two things), and two PMS
 * sources number theirs apart too, so the command id alone names nothing. The guard's row, its
 * lock, its attempts, its outcome, its dead letter and every ops filter are keyed by all three.
 *
 * The source:
 * - a command that arrived as a PMS webhook (`POST /webhooks/pms/:source`): that PMS source
 *   (the receiver sets the CloudEvent `source` to `/webhooks/pms/<source>`);
 * - a command produced straight onto a `commands.*` topic: its CloudEvent `source` attribute as
 *   it is (a back-office producer keeps it stable: it is part of every command's identity);
 * - a follow-up command rentbridge produces (a registration's enrollment): its cause's source;
 * - a guard row written before identities existed whose source could not be recovered:
 *   UNKNOWN_SOURCE, adopted by the first command of the same type, id and content.
 */
export interface CommandIdentity {
  source: string;
  commandType: CommandKind;
  commandId: string;
}

/** The source of guard rows and dead letters from before identities whose source is not known. */
export const UNKNOWN_SOURCE = '';

const PMS_WEBHOOK_SOURCE = /^\/webhooks\/pms\/([^/]+)$/;

/** The identity's source of a command whose CloudEvent `source` attribute is `ceSource`. */
export function commandSourceOf(ceSource: string): string {
  const pms = PMS_WEBHOOK_SOURCE.exec(ceSource);
  return pms ? pms[1]! : ceSource;
}

/** The CloudEvent `source` of a command from PMS source `source` (what the receiver writes). */
export function pmsCloudEventSource(source: string): string {
  return `/webhooks/pms/${source}`;
}

/**
 * Any text as one printable line: controls, quotes, backslashes and invisible or direction-changing
 * characters escaped (JSON-style), so an id shows as what it is in the CLI, the console and logs.
 * Plain ids come back unchanged.
 */
export function escapeId(text: string): string {
  // eslint-disable-next-line no-control-regex -- these are exactly what must be escaped
  return text.replace(/[\u0000-\u001f\u007f-\u009f"\\\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, (c) =>
    c === '"' ? '\\"' : c === '\\' ? '\\\\' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** One line naming an identity: `acme rental_payment "42"`. */
export function describeIdentity(identity: CommandIdentity): string {
  const source = identity.source === UNKNOWN_SOURCE ? '(unknown source)' : escapeId(identity.source);
  return `${source} ${identity.commandType} "${escapeId(identity.commandId)}"`;
}
