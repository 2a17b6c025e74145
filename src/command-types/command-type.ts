import type { CommandContract, CommandIdentity } from '../contracts/command-contracts.js';
import type { CommandOutcome } from '../contracts/outcomes.js';
import type {
  CommandRecord,
  CommandRepository,
  FailureInput,
  GuardPartner,
  ReadBackStrategy,
  SnapshotPageCache,
  SnapshotStore,
} from '../guard/index.js';
import type { PaymentLedger } from './rental-payments/payment-ledger.js';
import type { Logger } from '../logger.js';

/**
 * What a command type DOES, in its own folder (src/command-types/<type>.ts): how the guard reads back
 * one of its writes, and the optional steps before and after the guarded write. Its names on
 * every contract are its entry in the list of command types (src/contracts/command-contracts.ts);
 * the consumer joins the two (src/command-types/command-types.ts). Only the consumer loads this side.
 */
export interface CommandBehaviour<C = unknown> {
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

/** A command type as the consumer runs it: its contract and its behaviour. */
export type CommandType<C = unknown> = CommandContract<C> & CommandBehaviour<C>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rows of four command shapes
export type AnyCommandType = CommandType<any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- behaviours of four command shapes
export type AnyCommandBehaviour = CommandBehaviour<any>;

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
