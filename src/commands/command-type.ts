import type { ZodType } from 'zod';
import type { CommandIdentity } from '../events/command-identity.js';
import type { CommandKind, CommandOutcome } from '../events/outcomes.js';
import type {
  CommandRecord,
  CommandRepository,
  FailureInput,
  GuardPartner,
  PaymentLedger,
  ReadBackStrategy,
  SnapshotPageCache,
  SnapshotStore,
} from '../guard/index.js';
import type { Logger } from '../logger.js';

/**
 * What a command type is, in one row of the table (src/commands/command-types.ts,
 * docs/decisions/030-command-type-table.md): its names on every contract (PMS webhook, Kafka,
 * CloudEvents), its schema, which field holds its id and which its target, how the guard reads
 * back one of its writes, and the optional steps before and after the guarded write. The
 * receiver's routing, the consumer, the outcome and dead-letter builders, redrive and correction,
 * the trace and the JSON Schema export read it from here; nothing else says what a type is.
 */
export interface CommandType<C = unknown> {
  /** The consumer's name: `rentbridge consumer <name>`; its consumer group is `rentbridge.<name>`. */
  name: string;
  /** The command type of its identity and outcome (`command_type`). */
  kind: CommandKind;
  /** The `type` of the PMS webhook (`POST /webhooks/pms/:source`) that carries one. */
  pmsEventType: string;
  /** Logical topics (without KAFKA_TOPIC_PREFIX). */
  topic: string;
  outcomeTopic: string;
  /** The CloudEvent `type` of its commands and of its outcomes. */
  eventType: string;
  outcomeType: string;
  /** The command as the CloudEvent's `data` (the PMS webhook's `data` too). */
  schema: ZodType<C>;
  /** The field that holds the command's own id (with source and type, its identity). */
  idField: keyof C & string;
  /**
   * The field that names the record the command is about: its Kafka key and guard target. A
   * `normalize`d target (a registration's e-mail, lower-cased) keeps one record's commands on one
   * partition however the PMS spelled it.
   */
  target: { field: keyof C & string; normalize?: (value: string) => string };
  readBack(
    partner: GuardPartner,
    options: { snapshotCache?: SnapshotPageCache; snapshotStore?: SnapshotStore; ledger?: PaymentLedger },
  ): ReadBackStrategy<C>;
  /**
   * A check before the guarded write (a registration's eligibility check), run by the guard's
   * state machine: a refusal ends the command `rejected`; it is then published like any other.
   */
  check?: CommandCheck<C>;
  /**
   * Once the command is final: fields the outcome carries beside the guard's (the ids the PMS
   * maps its tenant to) and commands that follow from it (a registration's enrollment), published
   * with the outcome before the offset is committed. Throwing makes the consumer try again later.
   */
  complete?(command: C, record: CommandRecord, tools: StepTools): Promise<Completion>;
}

/**
 * A row of any command type: the table holds rows of four command shapes, each row checked against
 * its own command type where it is declared (`satisfies CommandType<RentalPaymentCommand>`).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export type AnyCommandType = CommandType<any>;

export interface CommandCheck<C> {
  /** Whether this command asks for the check. */
  wants(command: C): boolean;
  /** Null when the command passes; else the refusal. Throws on a transient failure. */
  run(command: C, tools: StepTools): Promise<FailureInput | null>;
}

/** What `check` / `complete` may use. */
export interface StepTools {
  /** The command's identity (source + type + id): the key of its guard row. */
  identity: CommandIdentity;
  partner: GuardPartner;
  repository: CommandRepository;
  logger: Logger;
  /** X-Request-Id for the step's next Partner API call: `<command>.s<n>`. */
  nextRequestId(): string;
}

export interface FollowUpCommand {
  /** Logical topic. */
  topic: string;
  key: string;
  /** Stable: a republished follow-up carries the same CloudEvent id. */
  id: string;
  type: string;
  subject: string;
  data: unknown;
}

export interface Completion {
  fields?: Partial<CommandOutcome>;
  followUps?: FollowUpCommand[];
}

/** An id or target as the text the guard keys on: ids given as numbers become their decimal text. */
function asText(value: unknown): string | null {
  if (typeof value === 'string' && value !== '') return value;
  return typeof value === 'number' ? String(value) : null;
}

/** The command's own id, read from the field its type declares. */
export function commandIdOf<C>(type: CommandType<C>, command: C): string {
  return String(command[type.idField]);
}

/** The record the command is about (its Kafka key and guard target). */
export function targetIdOf<C>(type: CommandType<C>, command: C): string {
  const value = String(command[type.target.field]);
  return type.target.normalize ? type.target.normalize(value) : value;
}

/**
 * Best effort, for data that failed its schema (an invalid message, a dead letter's value): the
 * id and target the type's fields hold, when they hold text or a number.
 */
export function looseIdsOf(
  type: AnyCommandType,
  data: Record<string, unknown>,
): { commandId: string | null; targetId: string | null } {
  const commandId = typeof data[type.idField] === 'string' ? asText(data[type.idField]) : null;
  const target = asText(data[type.target.field]);
  return {
    commandId,
    targetId: target != null && type.target.normalize ? type.target.normalize(target) : target,
  };
}
