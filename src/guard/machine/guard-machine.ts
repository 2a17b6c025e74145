import {
  type CommandRecord,
  type FailureInput,
  type FinalState,
  type GuardState,
  type StepInput,
  readRequestId,
  writeRequestId,
  sameContent,
} from './command-record.js';
import type { Snapshot, Verdict } from '../read-backs/read-back.js';
import { noAnswerCode, toOutcomeError, type OutcomeError } from '../../partner/errors.js';
import { failureKind, type FailureKind } from '../../partner/failure-classes.js';
import { backoffDelay } from '../../backoff.js';

/**
 * The guarded write's decisions, as ONE pure state machine written from DESIGN.md's table ("The
 * guarded write"): `decide(state, event)` answers the next state and the one action the driver
 * (guarded-write.ts) performs, which then reports what happened as the next event. Every change
 * to a command's row is one of its actions: looking the row up and the optional check before the
 * lock, the fast path (snapshot and row created in flight while the lock is
 * tried), taking or waiting for the lock, loading the row, the baseline, the write, the
 * read-backs and their retries, parking as unverified, the final state; the
 * redrive's reset is its `redriveReset` below. No I/O and no clock here: every time (and the
 * spread of every back-off) is carried by the events, so the whole policy is tested with tables
 * of cases and generated histories (test/guard/guard-machine*.test.ts).
 *
 * One file, read top to bottom (docs/decisions/040-the-house-made-plain.md): 1. the vocabulary
 * (state, events, actions); 2. what a failure means; 3. the policy the rules share (back-off, the
 * bound, the next write and read-back); 4. the rules before the write (check, lock, row); 5. the
 * rules of the write and its read-backs; 6. the table joining them in `decide`, and the redrive's
 * reset. Its row is command-record.ts; its driver is ../guarded-write.ts.
 *
 * The two rules that keep a late write from being applied twice (issue 13):
 * - ONE baseline per command: the snapshot read before the first write is kept on the row, and
 *   every read-back compares with it, across attempts, restarts and owners. A later snapshot
 *   could already hold a late write, and the next retry would then write again.
 * - "not applied" only from a read made once the Partner API's longest processing time
 *   (`maxProcessingMs`, PARTNER_MAX_PROCESSING_MS) has passed since the last write could have
 *   reached it (`sentBy`). Earlier reads can prove "applied", never "not applied": before the
 *   bound the machine waits and reads again; it never writes.
 */

/* ── 1. The vocabulary: the state, the events the driver reports, the actions it answers ── */

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

/* ── 2. What a failed write means ──────────────────────────────────────────────────────── */

/**
 * What a failed Partner API write means for the guard, read from the one classification of
 * failures the client reads too (src/partner/failure-classes.ts, spec 7.2, 7.4). The client's
 * errors are read structurally (`status`, `code`, `retryAfterSeconds`, `requestId`), so any
 * PartnerError shape works here.
 */
export type { FailureKind } from '../../partner/failure-classes.js';

export interface FailureInfo {
  kind: FailureKind;
  /** The Partner API's error whole, as outcomes and dead letters carry it (null: not a PartnerError). */
  error: OutcomeError | null;
  code: string | null;
  status: number | null;
  message: string;
  requestId: string | null;
  retryAfterSeconds: number | null;
}

export function classifyFailure(error: unknown): FailureInfo {
  const e = (error ?? {}) as {
    status?: unknown;
    code?: unknown;
    message?: unknown;
    requestId?: unknown;
    retryAfterSeconds?: unknown;
    name?: unknown;
  };
  const status = typeof e.status === 'number' ? e.status : null;
  const code =
    typeof e.code === 'string'
      ? e.code
      : status != null && status >= 400 && status < 500
        ? 'bad_request'
        : null;
  const info = {
    // No answer: a stable code of ours (timeout, network_error, ...), never a class name.
    code: code ?? (status == null ? noAnswerCode(error) : null),
    status,
    message: typeof e.message === 'string' ? e.message : String(error),
    requestId: typeof e.requestId === 'string' ? e.requestId : null,
    retryAfterSeconds: typeof e.retryAfterSeconds === 'number' ? e.retryAfterSeconds : null,
  };
  return { kind: failureKind(status, code), error: toOutcomeError(error), ...info };
}

/* ── 3. The policy the rules share ─────────────────────────────────────────────────────── */

/**
 * The pure policy the guard machine's transitions share: back-off with jitter, the processing
 * bound, the next write and read-back with their waits, the steps kept, the final state's error.
 */

/** Back-off before retry `n` (1-based), without jitter. */
export function backoffMs(limits: MachineLimits, n: number): number {
  return backoffDelay({ initialRetryTime: limits.backoffMs, maxRetryTime: limits.maxBackoffMs }, n);
}

/** A back-off spread ±25% by `rand` (0.5: exactly `ms`). */
export function jittered(ms: number, rand = 0.5): number {
  return ms * (0.75 + rand * 0.5);
}

/** When a read-back may first prove "not applied": the bound past the last send. */
export function boundAt(state: MachineState, limits: MachineLimits): number {
  return (state.sentBy ?? 0) + limits.maxProcessingMs;
}

/** The failure as the row keeps it; an `unverified` one says what evidence the read-back lacked. */
export function rowError(
  failure: FailureInfo | null,
  final: FinalState,
  missing: string | null,
): FailureInput | null {
  if (!failure) return null;
  let f = failure;
  if (final === 'unverified' && missing) {
    const message = `read-back could not tell: ${missing}; the write: ${failure.message}`;
    // The outcome shows the Partner API's error whole; its message says why too.
    f = { ...failure, message, error: failure.error && { ...failure.error, message } };
  }
  return { code: f.code, status: f.status, message: f.message, ...(f.error && { partner_error: f.error }) };
}

export type FinishAction = Extract<GuardAction, { type: 'finish' }>;

export function finish(
  state: MachineState,
  final: FinalState,
  failure: FailureInfo | null,
): { state: MachineState; action: FinishAction } {
  return {
    state: { ...state, row: final, checking: null },
    action: {
      type: 'finish',
      state: final,
      failure,
      alreadyFinal: false,
      error: rowError(failure, final, state.missing),
    },
  };
}

/** The next write, after `waitMs` (Retry-After when `throttled`, else a back-off spread by `rand`). */
export function write(
  state: MachineState,
  waitMs: number,
  pending: FailureInfo | null,
  throttled = false,
  at = 0,
  rand?: number,
): Decision {
  const attempt = state.attempts + 1;
  const requestId = writeRequestId(state.base, attempt);
  const begun = state.begun && attempt === 1;
  const record =
    state.record && !begun
      ? { ...state.record, requestIds: [...state.record.requestIds, requestId] }
      : state.record;
  const waited = throttled ? waitMs : Math.round(jittered(waitMs, rand));
  const wait: Wait | undefined =
    waitMs > 0
      ? {
          until: at + waited,
          throttled,
          step: {
            attempt: state.attempts,
            requestId: writeRequestId(state.base, Math.max(state.attempts, 1)),
            message: throttled
              ? `throttled: 429 Retry-After, ${waitMs} ms, for every process sharing the budget`
              : `back-off before write attempt ${attempt}`,
          },
        }
      : undefined;
  return {
    state: { ...state, row: 'in_flight', checking: null, failure: null, reads: 0, readIds: 0, record },
    action: {
      type: 'write',
      attempt,
      waitMs,
      pending,
      throttled,
      requestId,
      begun,
      ...(pending && { markPending: rowError(pending, 'exhausted', null)! }),
      ...(wait && { wait }),
    },
  };
}

/** A read-back at `notBefore`, waited for (and the wait kept as a step) when it is later than `at`. */
export function readBack(
  state: MachineState,
  limits: MachineLimits,
  at: number,
  notBefore: number,
  whyNow: 'early' | 'bound',
): Decision {
  const message =
    whyNow === 'bound'
      ? `processing bound: "not applied" may be concluded only from a read made PARTNER_MAX_PROCESSING_MS (${limits.maxProcessingMs} ms) after the write's call ended`
      : 'before an early read-back: it can prove "applied" before the processing bound';
  const step = {
    attempt: state.attempts,
    requestId: writeRequestId(state.base, Math.max(state.attempts, 1)),
    message,
  };
  return {
    state,
    action: {
      type: 'read_back',
      notBefore,
      whyNow,
      ...(notBefore > at && {
        wait: { until: notBefore, throttled: false, step },
        ...(whyNow === 'bound' && {
          note: {
            level: 'info' as const,
            msg: 'write unanswered: waiting out the processing bound before concluding',
            fields: { waitMs: notBefore - at, attempt: state.attempts },
          },
        }),
      }),
    },
  };
}

/** The next read-back of an uncertain write: early reads double their gap, the last is at the bound. */
export function nextRead(state: MachineState, limits: MachineLimits, at: number): Decision {
  const bound = boundAt(state, limits);
  const early = (state.sentBy ?? at) + limits.readBackDelayMs * 2 ** state.reads;
  const notBefore = Math.max(at, Math.min(early, bound));
  return readBack(state, limits, at, notBefore, notBefore >= bound ? 'bound' : 'early');
}

/** The read under way as a step: its request ids (`.a<n>.r<k>`), what it found, and when. */
export function readStep(
  state: MachineState,
  kind: 'snapshot' | 'read_back',
  readIds: number,
  startedAt: number,
  result: string,
  message: string,
): StepInput {
  const from = state.reading?.from ?? state.readIds;
  const ids = Array.from({ length: Math.max(readIds - from, 1) }, (_, i) =>
    readRequestId(state.base, state.attempts, from + i + 1),
  );
  const many = kind === 'snapshot' && ids.length > 1 ? `; requests ${ids.join(', ')}` : '';
  return {
    attempt: state.attempts,
    requestId: ids[0]!,
    kind,
    result,
    message: message + many,
    startedAt: new Date(state.reading?.at ?? startedAt),
  };
}

/** What a snapshot found, in a step's words. */
export function snapshotWords(snapshot: Snapshot): { result: string; message: string } {
  return snapshot.found
    ? {
        result: 'read',
        message: `status ${snapshot.status ?? '–'}, updated_at ${snapshot.updated_at ?? '–'}`,
      }
    : { result: 'not found', message: 'no such record' };
}

/** Why a read-back reached its verdict, in the words of the guard's rule (DESIGN.md). */
export function verdictReason(verdict: Verdict, missing: string | null): string {
  if (verdict === 'applied') return 'the target state is reached: the write is visible on the record';
  if (verdict === 'not_applied')
    return 'the record is unchanged since the snapshot taken before the first write';
  return missing
    ? `cannot tell: ${missing}`
    : 'cannot tell: the record changed since the snapshot, but not as this write would';
}

/* ── 4. The rules before the write: the check, the lock, the row ───────────────────────── */

/**
 * The guard's rules before its write rules apply: the optional check, the lock, the row.
 *
 * - A command with a check (a registration's eligibility check) is checked first, unless its row
 *   shows it checked already: the check has no side effect, so it runs again after a crash until
 *   the row exists. A refusal ends the command `rejected` with the check's details.
 * - The fast path (a command seen for the first time): the lock is tried while the snapshot is
 *   read and the row created directly `in_flight` with it, so the common case waits for none of
 *   them in turn. Creating the row before the lock is held is safe: no write is ever sent without
 *   the lock, and whoever holds it walks the row from its committed state.
 * - The lock not free at once (a rebalance handed this process a command another one is
 *   writing): what was read or created meanwhile is dropped, the lock waited for, and the row
 *   walked as its holder left it.
 */

type Of<T extends GuardEvent['type']> = Extract<GuardEvent, { type: T }>;

export function began(event: Of<'began'>): Decision {
  const state: MachineState = {
    ...initialState(),
    phase: event.check ? 'look' : 'open',
    commandId: event.commandId,
    base: event.base,
    payload: event.payload,
  };
  return { state, action: event.check ? { type: 'look' } : { type: 'snapshot', tryLock: true } };
}

const open = (state: MachineState): Decision => ({
  state: { ...state, phase: 'open' },
  action: { type: 'snapshot', tryLock: true },
});

/** Checked already (a row past its first state), or another command's row: no check. */
export function looked(state: MachineState, event: Of<'looked'>): Decision {
  const row = event.record;
  if (row && !sameContent(row.payload, state.payload)) return open(state);
  if (row && !(row.state === 'pending' && row.attempts === 0)) return open(state);
  return { state: { ...state, phase: 'check' }, action: { type: 'check' } };
}

export function checked(state: MachineState, event: Of<'checked'>): Decision {
  const refusal = event.refusal;
  if (!refusal) return open(state);
  const fields = { code: refusal.code, fields: Object.keys(refusal.details ?? {}) };
  return {
    state: { ...state, refusal },
    action: { type: 'ensure', note: { level: 'info', msg: 'check refused', fields } },
  };
}

export function ensured(state: MachineState, event: Of<'ensured'>): Decision {
  const d = finish({ ...state, record: event.record }, 'rejected', null);
  return { state: d.state, action: { ...d.action, error: state.refusal } };
}

/** The step that records a snapshot read (the fast path's, or the baseline's once the lock is held). */
function snapshotStep(state: MachineState, event: Of<'snapshot_taken'>, snapshot: Snapshot) {
  const { result, message } = snapshotWords(snapshot);
  return readStep(
    state,
    'snapshot',
    event.readIds ?? state.readIds,
    event.startedAt ?? event.at,
    result,
    message,
  );
}

/** The fast path's snapshot: the row is created in flight with it. */
export function snapshotRead(state: MachineState, event: Of<'snapshot_taken'>): Decision {
  const snapshot = event.snapshot!;
  const step = snapshotStep(state, event, snapshot);
  return {
    state: {
      ...state,
      early: { snapshot, step },
      readIds: event.readIds ?? state.readIds,
      reading: null,
      readFailures: 0,
    },
    action: { type: 'create', snapshot, step },
  };
}

export function snapshotFailed(
  state: MachineState,
  event: Of<'read_failed'>,
  limits: MachineLimits,
): Decision {
  return readFailed(state, event, limits, (s, f) => ({
    state: { ...s, phase: 'lock', readFailures: 0, reading: null },
    action: {
      type: 'lock',
      waitMs: 0,
      note: {
        level: 'warn',
        msg: 'snapshot failed; looking the command up first',
        err: event.error,
        fields: { code: f.code },
      },
    },
  }));
}

export function created(state: MachineState, event: Of<'created'>): Decision {
  const record = event.record;
  return {
    state: {
      ...state,
      phase: 'lock',
      begun: record != null,
      record,
      ...(record && { base: record.requestIdBase }),
    },
    action: { type: 'lock', waitMs: 0 },
  };
}

export function locked(state: MachineState, event: Of<'locked'>, limits: MachineLimits): Decision {
  if (!event.held && !state.lockWaited) {
    // What was read or created meanwhile is dropped: the snapshot may predate the holder's write,
    // and a row created here in flight (its write never sent) is read back like any other.
    const waitMs = limits.lockWaitMs ?? 30_000;
    return {
      state: { ...state, lockWaited: true, early: null, begun: false, record: null },
      action: {
        type: 'lock',
        waitMs,
        note: { level: 'info', msg: 'command held by another process: waiting for it', fields: { waitMs } },
      },
    };
  }
  if (!event.held) {
    const message = `command ${state.commandId} is still being worked on by another process`;
    return { state, action: { type: 'stop', conflict: false, busy: true, message } };
  }
  const note = state.lockWaited
    ? { level: 'info' as const, msg: 'command lock taken after waiting' }
    : undefined;
  const d: Decision = state.begun
    ? // The row created here in flight has not been sent yet: to the machine it is pending.
      startedFrom(state, event.at, 'pending', 0, state.early!.snapshot, limits)
    : { state, action: { type: 'load' } };
  return note ? { state: d.state, action: { ...d.action, note } } : d;
}

export function loaded(state: MachineState, event: Of<'loaded'>, limits: MachineLimits): Decision {
  const record = event.record;
  const s: MachineState = { ...state, record, base: record.requestIdBase };
  if (!sameContent(record.payload, state.payload)) {
    // Same identity, other content: another command under a reused id. Never walked, never written.
    const fields = { existingTarget: record.targetId, existingState: record.state };
    return {
      state: s,
      action: {
        type: 'stop',
        conflict: true,
        busy: false,
        message: 'conflicting duplicate',
        note: { level: 'warn', msg: 'conflicting duplicate', fields },
      },
    };
  }
  if (record.state === 'in_flight') {
    // A previous run committed in_flight and never recorded the answer (crash, kill, lost
    // connection): the write may have landed, or may land yet. Read back; never write on a guess.
    const note = {
      level: 'warn' as const,
      msg: 'command found in flight: reading back',
      fields: { attempt: record.attempts },
    };
    return { state: s, action: { type: 'note_interrupted', attempt: record.attempts, note } };
  }
  return startedFrom(s, event.at, record.state, record.attempts, record.snapshot, limits);
}

export function noted(state: MachineState, event: Of<'noted'>, limits: MachineLimits): Decision {
  const record = state.record!;
  return startedFrom(state, event.at, record.state, record.attempts, record.snapshot, limits);
}

/* ── 5. The rules of the write and its read-backs ──────────────────────────────────────── */

/**
 * The guard's rules once the command's lock is held and its row known (DESIGN.md, "The guarded
 * write"): read the baseline, write, read back after an answer in doubt, retry what is proven
 * not applied, park what cannot be told. Pure: every time and every spread of a back-off comes
 * with the events.
 */

/** The lock is held and the row loaded: publish a final row again, read back one in flight, else write. */
export function started(state: MachineState, event: Of<'started'>, limits: MachineLimits): Decision {
  const s: MachineState = {
    ...state,
    phase: 'walk',
    row: event.row,
    attempts: event.attempts,
    baseline: event.baseline,
    doubted: state.doubted || event.attempts > 0,
  };
  if (event.row !== 'new' && event.row !== 'pending' && event.row !== 'in_flight') {
    // Final: a redelivery or a redrive. Publish the outcome again, write nothing.
    return { state: s, action: { type: 'finish', state: event.row, failure: null, alreadyFinal: true } };
  }
  if (event.row === 'in_flight') {
    // An earlier run sent a write and never recorded its answer: it may land yet. Without
    // the baseline there is nothing to compare with: park it for ops, never write again.
    if (!s.baseline) return finish(s, 'unverified', INTERRUPTED);
    const taken = {
      ...s,
      sentBy: event.at,
      checking: 'uncertain' as const,
      doubted: true,
      failure: INTERRUPTED,
    };
    return nextRead(taken, limits, event.at);
  }
  // new or pending: every write before this one is proven not applied (or none was sent).
  if (s.baseline) return write(s, 0, null);
  // A snapshot read before the lock was taken at once is as good (nobody else was writing).
  if (s.early)
    return withSteps(write({ ...s, baseline: true, snapshot: s.early.snapshot }, 0, null), s.early.step);
  return { state: s, action: { type: 'snapshot' } };
}

function withSteps(d: Decision, ...steps: NonNullable<GuardAction['steps']>): Decision {
  return { state: d.state, action: { ...d.action, steps: [...(d.action.steps ?? []), ...steps] } };
}

export function snapshotTaken(state: MachineState, event: Of<'snapshot_taken'>): Decision {
  const snapshot = event.snapshot ?? state.snapshot;
  const s = { ...state, baseline: true, snapshot, reading: null, readFailures: 0 };
  if (!snapshot) return write(s, 0, null);
  const step = snapshotStep(state, event, snapshot);
  return withSteps(write(s, 0, null), step);
}

export function answered(state: MachineState, event: Of<'answered'>, limits: MachineLimits): Decision {
  const s: MachineState = { ...state, row: 'in_flight', attempts: state.attempts + 1, sentBy: event.at };
  const f = event.failure;
  if (!f) {
    const at = new Date(event.at);
    const record = s.record && {
      ...s.record,
      state: 'applied' as const,
      attempts: s.attempts,
      snapshot: s.snapshot,
      updatedAt: at,
      finishedAt: at,
    };
    const d = finish(s, 'applied', null);
    return {
      state: d.state,
      action: { ...d.action, settle: { attempt: s.attempts, status: event.status ?? 200, record } },
    };
  }
  return afterFailure(s, f, event, limits);
}

function afterFailure(
  s: MachineState,
  f: FailureInfo,
  event: Of<'answered'>,
  limits: MachineLimits,
): Decision {
  switch (f.kind) {
    case 'throttled': {
      // Spec 7.4.2: a throttled request was not applied.
      const t = { ...s, throttles: s.throttles + 1 };
      if (t.throttles > limits.maxThrottles) return finish(t, 'exhausted', f);
      return write(t, (f.retryAfterSeconds ?? 1) * 1000, f, true, event.at);
    }
    case 'unauthenticated':
      // Not applied; the client already renewed its token once, so the key itself is refused.
      return finish(s, 'rejected', f);
    case 'lock_failed': {
      const l = { ...s, lockRetries: s.lockRetries + 1 };
      if (l.lockRetries > limits.maxLockRetries) return finish(l, 'exhausted', f);
      return write(l, backoffMs(limits, l.lockRetries), f, false, event.at, event.rand);
    }
    case 'rejected':
      // A refusal after a write in doubt is evidence too: the first write may have landed and
      // be what the platform now refuses a second of (issue 30). Read back before concluding.
      if (!s.doubted) return finish(s, 'rejected', f);
      return checkEarly(s, 'refused', f, limits, event.at);
    case 'invalid_state':
      // The write was refused; is the record already where the command wanted it?
      return checkEarly(s, 'invalid_state', f, limits, event.at);
    case 'uncertain':
      return nextRead({ ...s, checking: 'uncertain', doubted: true, failure: f, reads: 0 }, limits, event.at);
  }
}

/** A refused write read back at once (an early read-back): `verdict` decides by `checking`. */
function checkEarly(
  s: MachineState,
  checking: 'refused' | 'invalid_state',
  f: FailureInfo,
  limits: MachineLimits,
  at: number,
): Decision {
  return readBack({ ...s, checking, failure: f, reads: 0 }, limits, at, at, 'early');
}

export function read(state: MachineState, event: Of<'read'>, limits: MachineLimits): Decision {
  const missing = event.missing ?? null;
  const step = readStep(
    state,
    'read_back',
    event.readIds ?? state.readIds,
    event.startedAt ?? event.at,
    event.verdict,
    verdictReason(event.verdict, missing),
  );
  const s: MachineState = {
    ...state,
    reads: state.reads + 1,
    readIds: event.readIds ?? state.readIds,
    reading: null,
    readFailures: 0,
    missing,
  };
  return withSteps(verdict(s, state, event, limits), step);
}

function verdict(s: MachineState, state: MachineState, event: Of<'read'>, limits: MachineLimits): Decision {
  const f = state.failure;
  if (state.checking === 'invalid_state') {
    return finish(s, event.verdict === 'applied' ? 'already_applied' : 'rejected', f);
  }
  if (state.checking === 'refused') {
    // Refused now, so nothing of this attempt landed; the earlier write did if the target
    // shows the command's effect. Can't tell: park it, never call it refused on a guess.
    const final =
      event.verdict === 'applied' ? 'applied' : event.verdict === 'unknown' ? 'unverified' : 'rejected';
    return finish(s, final, f);
  }
  if (event.verdict === 'applied') return finish(s, 'applied', f);
  if (event.at < boundAt(state, limits)) {
    // "Unchanged" or "can't tell" before the bound proves nothing: the write may land yet.
    return nextRead(s, limits, event.at);
  }
  if (event.verdict === 'unknown') return finish(s, 'unverified', f);
  // Past the bound and unchanged since the baseline: the write never landed and never will.
  const r = { ...s, retries: s.retries + 1 };
  if (r.retries > limits.maxRetries) return finish(r, 'exhausted', f);
  return write(r, backoffMs(limits, r.retries), f, false, event.at, event.rand);
}

/**
 * A read (snapshot or read-back) failed. A 429 waits out Retry-After and reads again; another
 * failure is retried after a back-off, `maxReadRetries` times; then `spent` decides. An answer
 * whose shape the client does not recognise is no evidence either way: the same read would fail
 * the same way, so a read-back takes it as "can't tell", never as a failed read.
 */
export function readFailed(
  state: MachineState,
  event: Of<'read_failed'>,
  limits: MachineLimits,
  spent: (s: MachineState, f: FailureInfo, what: string) => Decision,
): Decision {
  const what = state.checking ? 'read-back' : 'snapshot';
  const err = event.error as { name?: unknown; message?: unknown } | null;
  if (what === 'read-back' && err?.name === 'PartnerResponseError') {
    const missing = `the answer's shape is not recognised (${String(err.message)})`;
    return read(state, { ...event, type: 'read', verdict: 'unknown', missing }, limits);
  }
  const f = classifyFailure(event.error);
  const n = state.readFailures + 1;
  const s: MachineState = {
    ...state,
    readFailures: n,
    readIds: event.readIds,
    reading: state.reading ?? { from: state.readIds, at: event.startedAt },
  };
  const throttled = f.kind === 'throttled';
  if (!throttled && n > (limits.maxReadRetries ?? 5)) return spent(s, f, what);
  const ms = throttled ? (f.retryAfterSeconds ?? 1) * 1000 : jittered(backoffMs(limits, n), event.rand);
  const wait = { until: event.at + Math.round(ms), throttled, step: null };
  const again: GuardAction =
    what === 'read-back'
      ? { type: 'read_back', notBefore: wait.until, whyNow: 'early', wait }
      : { type: 'snapshot', wait };
  if (!throttled) {
    again.note = {
      level: 'warn',
      msg: 'read failed; retrying',
      fields: { what, partnerRequestId: f.requestId },
      err: event.error,
    };
  }
  return { state: s, action: again };
}

/** The row as the machine first sees it once the lock is held. */
export function startedFrom(
  state: MachineState,
  at: number,
  row: 'new' | GuardState,
  attempts: number,
  snapshot: Snapshot | null,
  limits: MachineLimits,
): Decision {
  return started(
    { ...state, snapshot },
    { type: 'started', at, row, attempts, baseline: snapshot != null },
    limits,
  );
}

/* ── 6. The table: one rule per phase and event, and the redrive's reset ─────────────────── */

type Handler<T extends GuardEvent['type']> = (
  state: MachineState,
  event: Extract<GuardEvent, { type: T }>,
  limits: MachineLimits,
) => Decision;
type Table = { [T in GuardEvent['type']]?: Handler<T> };

/** Per phase, the events it expects and the rule each follows. */
const TABLE: Record<Phase, Table> = {
  look: { looked },
  check: { checked, ensured },
  open: { snapshot_taken: snapshotRead, read_failed: snapshotFailed, created },
  lock: { locked, loaded, noted },
  walk: {
    started,
    snapshot_taken: snapshotTaken,
    answered,
    read,
    read_failed: (s, e, limits) =>
      readFailed(s, e, limits, (state, f, what) => ({
        state,
        action: {
          type: 'stop',
          conflict: false,
          busy: false,
          message: `${what} failed: ${f.message}`,
          cause: e.error,
        },
      })),
  },
};

export function decide(state: MachineState, event: GuardEvent, limits: MachineLimits): Decision {
  if (event.type === 'began') return began(event);
  const handler = TABLE[state.phase][event.type] as Handler<typeof event.type> | undefined;
  if (handler) return handler(state, event as never, limits);
  throw new Error(`guard: no decision for ${JSON.stringify(event)} in ${JSON.stringify(state)}`);
}

/** Final guard states in which the command reached the Partner API: a redrive must not send it again. */
export const APPLIED_STATES = ['applied', 'already_applied'] as const;
/** Final guard states that did not apply the command: a redrive resets them so the consumer retries. */
export const RESETTABLE_STATES = ['rejected', 'unverified', 'exhausted'] as const;

/**
 * The state a redrive puts a final, not-applied row back into, so that the consumer tries
 * again through the guard's own rules (docs/decisions/008-redrive-resets-the-guard-row.md):
 * - `rejected`, `exhausted`: the write is known not to have landed → `pending` (write again);
 * - `unverified`: it may have landed → `in_flight`, which makes the guard read back first (against
 *   the snapshot it kept) and write only if the record is unchanged; never a write on a guess.
 * Null: the row is not in a state a redrive resets.
 */
export function redriveReset(state: string, hasSnapshot: boolean): 'pending' | 'in_flight' | null {
  if (!(RESETTABLE_STATES as readonly string[]).includes(state)) return null;
  return state === 'unverified' && hasSnapshot ? 'in_flight' : 'pending';
}
