import type { FailureInfo } from './classify-failure.js';
import type { CommandRecord, FailureInput, FinalState, GuardState, StepInput } from './command-record.js';
import type { Snapshot, Verdict } from '../read-backs/read-back.js';

/**
 * The guard state machine's vocabulary: its state, the events the driver reports and the actions
 * it answers. The policy its transitions share is guard-policy.ts; the transitions are in
 * guard-walk.ts (the write and its read-backs) and guard-opening.ts (the check, the lock, the
 * row); guard-machine.ts joins them in `decide`.
 */

export interface MachineLimits {
  /** Writes retried after a read-back proved the previous one not applied. */
  maxRetries: number;
  /** Retries after `409 lock_failed`. */
  maxLockRetries: number;
  /** 429 answers tolerated for one command before it is `exhausted`. */
  maxThrottles: number;
  /** First back-off delay (doubled per retry, spread by the event's `rand`). */
  backoffMs: number;
  maxBackoffMs: number;
  /** First read-back after an uncertain write, counted from `sentBy`. */
  readBackDelayMs: number;
  /** The Partner API's longest processing time of a write (the design's assumption). */
  maxProcessingMs: number;
  /** Retries of a read (snapshot or read-back) that failed transiently. Default 5. */
  maxReadRetries?: number;
  /** How long to wait for a command another process holds. Default 30 s. */
  lockWaitMs?: number;
}

/** Where a walk is: before the lock (`look`, `check`, `open`), taking it (`lock`), holding it (`walk`). */
export type Phase = 'look' | 'check' | 'open' | 'lock' | 'walk';

export interface MachineState {
  /** The row's committed state (`new`: no row yet). */
  row: 'new' | GuardState;
  /** Writes sent so far (the attempt number of the last one). */
  attempts: number;
  /** The baseline snapshot (read before the first write) is stored on the row. */
  baseline: boolean;
  /**
   * The latest moment the last write could have reached the Partner API: when its call ended
   * (answer or client time-out), or, for a write left in flight by an earlier run, when this run
   * took the command over (the earlier owner was gone by then). Epoch ms; null before any write.
   */
  sentBy: number | null;
  /** Why a read-back is under way; null when none is. */
  checking: null | 'uncertain' | 'invalid_state' | 'refused';
  /**
   * An earlier write of this command was in doubt (answered with a 5xx, a time-out or a network
   * error, or found in flight), or a run started with writes behind it: a refusal of a later write
   * may then be the first one's doing (an e-mail taken by the customer it created).
   */
  doubted: boolean;
  /** The failure that started the check (kept for the final state's error). */
  failure: FailureInfo | null;
  /** Read-backs made since the last write. */
  reads: number;
  retries: number;
  lockRetries: number;
  throttles: number;
  phase: Phase;
  /** Every request id of the command starts with it: the one it asks for until its row is known. */
  base: string;
  /** The command as received (its row must hold the same content). */
  payload: unknown;
  /** The row as last loaded or committed (null before it is known). */
  record: CommandRecord | null;
  /** The baseline snapshot itself. */
  snapshot: Snapshot | null;
  /** A snapshot read before the lock was held: used if the lock came at once. */
  early: { snapshot: Snapshot; step: StepInput } | null;
  /** The row was created here `in_flight` for attempt 1, whose write is not sent yet. */
  begun: boolean;
  /** Partner read requests since the last write (read request ids `<base>.a<n>.r<k>`). */
  readIds: number;
  /** The read under way: its first request's number and start (it may be retried). */
  reading: { from: number; at: number } | null;
  /** Failed tries of the read under way. */
  readFailures: number;
  /** What evidence the last read-back lacked, if it could not tell (for the unverified reason). */
  missing: string | null;
  /** The command's id (for what the guard says about it). */
  commandId: string;
  /** The check's refusal, kept until the row is there to end with it. */
  refusal: FailureInput | null;
  /** The lock was not free at once: this walk waited for it. */
  lockWaited: boolean;
}

/** Reports of the driver; times are epoch ms, `rand` in [0, 1) spreads back-offs (default: none). */
export type GuardEvent =
  /** The walk begins: `check` when the command has a check to pass first. */
  | { type: 'began'; commandId: string; base: string; payload: unknown; check: boolean }
  /** The command's row as found before the check (null: none yet). */
  | { type: 'looked'; record: CommandRecord | null }
  /** The check passed (`refusal` null) or refused the command. */
  | { type: 'checked'; refusal: FailureInput | null }
  /** The row exists (created `pending` if it did not). */
  | { type: 'ensured'; record: CommandRecord }
  /** The first-seen command's row was created in flight (null: it could not be, it exists). */
  | { type: 'created'; record: CommandRecord | null }
  /** The command's lock: held, or held by another process still. */
  | { type: 'locked'; at: number; held: boolean }
  /** The row as found once the lock is held. */
  | { type: 'loaded'; at: number; record: CommandRecord }
  /** The write an earlier run left in flight is marked interrupted. */
  | { type: 'noted'; at: number }
  /** The command's lock is held and its row loaded. */
  | { type: 'started'; at: number; row: 'new' | GuardState; attempts: number; baseline: boolean }
  /** The baseline snapshot was read (and is stored with the next write). */
  | { type: 'snapshot_taken'; at: number; snapshot?: Snapshot; readIds?: number; startedAt?: number }
  /** The write's call ended at `at`: `failure` null for a 2xx (`status` its HTTP status). */
  | {
      type: 'answered';
      at: number;
      failure: FailureInfo | null;
      status?: number;
      rand?: number;
    }
  /** A read-back sent at `at` said `verdict` (`missing`: the evidence it lacked). */
  | {
      type: 'read';
      at: number;
      verdict: Verdict;
      readIds?: number;
      startedAt?: number;
      missing?: string | null;
      rand?: number;
    }
  /** A read (snapshot or read-back) failed with `error`. */
  | { type: 'read_failed'; at: number; error: unknown; readIds: number; startedAt: number; rand?: number };

/** A wait before an action: until `until` (epoch ms); `throttled`: the shared budget's pause. */
export interface Wait {
  until: number;
  throttled: boolean;
  /** The wait kept as a step (null: not kept): its attempt, the write it is about, and why. */
  step: { attempt: number; requestId: string; message: string } | null;
}

/** A line for the guard's log. */
export interface Note {
  level: 'info' | 'warn';
  msg: string;
  fields?: Record<string, unknown>;
  /** The error behind it (logged as `err`). */
  err?: unknown;
}

/** What the driver does before an action, in this order. */
export interface Prelude {
  /** Steps to keep (a snapshot, a read-back's verdict). */
  steps?: StepInput[];
  note?: Note;
  /** Commit `pending` first (with this error): the last write is proven not applied. */
  markPending?: FailureInput;
  wait?: Wait;
}

export type GuardAction = Prelude &
  (
    | /** Find the command's row (no lock), then report `looked`. */ { type: 'look' }
    | /** Run the command's check (no side effect), then report `checked`. */ { type: 'check' }
    | /** Make sure the row exists (`pending`), then report `ensured`. */ { type: 'ensure' }
      /** Read the target's baseline snapshot (the row has none), then report `snapshot_taken`. */
    | { type: 'snapshot'; tryLock?: boolean }
    /** Create the row `in_flight` for attempt 1 with the snapshot and its step; report `created`. */
    | { type: 'create'; snapshot: Snapshot; step: StepInput }
    /** Take the lock: the try started with the snapshot (`waitMs` 0), or wait for it; report `locked`. */
    | { type: 'lock'; waitMs: number }
    /** Load the row under the lock (created `pending` if none); report `loaded`. */
    | { type: 'load' }
    /** Mark write `attempt`, left in flight by an earlier run, interrupted; report `noted`. */
    | { type: 'note_interrupted'; attempt: number }
    /**
     * After `pending` is committed (when given: the last write is proven not applied) and
     * `waitMs` has passed (all writes wait for it when `throttled`), commit `in_flight` for
     * attempt `attempt` (unless `begun`: the row was created so) and send the write; report
     * `answered`.
     */
    | {
        type: 'write';
        attempt: number;
        waitMs: number;
        pending: FailureInfo | null;
        throttled: boolean;
        requestId: string;
        begun: boolean;
      }
    /** At `notBefore` (epoch ms) read the target back against the baseline; report `read`. */
    | { type: 'read_back'; notBefore: number; whyNow: 'early' | 'bound' }
    /** Stop: the command is another's (`conflict`), or its state could not be decided. */
    | { type: 'stop'; conflict: boolean; busy: boolean; message: string; cause?: unknown }
    /**
     * Commit the final state with `error` (unless `alreadyFinal`: nothing was done, publish it
     * again). `settle`: a 2xx; its commit is not awaited, `record` is the row it commits.
     */
    | {
        type: 'finish';
        state: FinalState;
        failure: FailureInfo | null;
        alreadyFinal: boolean;
        error?: FailureInput | null;
        settle?: { attempt: number; status: number; record: CommandRecord | null };
      }
  );

export interface Decision {
  state: MachineState;
  action: GuardAction;
}

export function initialState(): MachineState {
  return {
    row: 'new',
    attempts: 0,
    baseline: false,
    sentBy: null,
    checking: null,
    doubted: false,
    failure: null,
    reads: 0,
    retries: 0,
    lockRetries: 0,
    throttles: 0,
    phase: 'walk',
    base: '',
    payload: null,
    record: null,
    snapshot: null,
    early: null,
    begun: false,
    readIds: 0,
    reading: null,
    readFailures: 0,
    missing: null,
    commandId: '',
    refusal: null,
    lockWaited: false,
  };
}

/** The failure recorded when a run finds a write in flight that an earlier run never saw answered. */
export const INTERRUPTED: FailureInfo = {
  kind: 'uncertain',
  code: 'interrupted',
  status: null,
  message: 'write interrupted before its answer was recorded',
  error: null,
  requestId: null,
  retryAfterSeconds: null,
};
