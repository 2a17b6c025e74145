import { backoffDelay } from '../backoff.js';
import type { FailureInfo } from './classify-failure.js';
import type { FinalState, GuardState } from './command-repository.js';
import type { Verdict } from './read-back.js';

/**
 * The guarded write's decisions, as a pure state machine written from DESIGN.md's table ("The
 * guarded write"): `decide(state, event)` answers the next state and the one action the driver
 * (guarded-write.ts) performs, which then reports what happened as the next event. No I/O and
 * no clock here: every time is carried by the events, so the whole policy is tested with tables
 * of cases and generated histories (test/guard/guard-machine*.test.ts).
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

export interface MachineLimits {
  /** Writes retried after a read-back proved the previous one not applied. */
  maxRetries: number;
  /** Retries after `409 lock_failed`. */
  maxLockRetries: number;
  /** 429 answers tolerated for one command before it is `exhausted`. */
  maxThrottles: number;
  /** First back-off delay (doubled per retry; the driver adds jitter). */
  backoffMs: number;
  maxBackoffMs: number;
  /** First read-back after an uncertain write, counted from `sentBy`. */
  readBackDelayMs: number;
  /** The Partner API's longest processing time of a write (the design's assumption). */
  maxProcessingMs: number;
}

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
}

export type GuardEvent =
  /** The command's lock is held and its row loaded. */
  | {
      type: 'started';
      at: number;
      row: 'new' | GuardState;
      attempts: number;
      baseline: boolean;
    }
  /** The baseline snapshot was read (and is stored with the next write). */
  | { type: 'snapshot_taken'; at: number }
  /** The write's call ended at `at`: `failure` null for a 2xx. */
  | { type: 'answered'; at: number; failure: FailureInfo | null }
  /** A read-back sent at `at` said `verdict`. */
  | { type: 'read'; at: number; verdict: Verdict };

export type GuardAction =
  /** Read the target's baseline snapshot (the row has none), then report `snapshot_taken`. */
  | { type: 'snapshot' }
  /**
   * After `pending` is committed (when given: the last write is proven not applied) and
   * `waitMs` has passed (all writes wait for it when `throttled`), commit `in_flight` for
   * attempt `attempt` and send the write; report `answered`.
   */
  | {
      type: 'write';
      attempt: number;
      waitMs: number;
      pending: FailureInfo | null;
      throttled: boolean;
    }
  /** At `notBefore` (epoch ms) read the target back against the baseline; report `read`. */
  | { type: 'read_back'; notBefore: number; whyNow: 'early' | 'bound' }
  /** Commit the final state (unless `alreadyFinal`: nothing was done, publish it again). */
  | { type: 'finish'; state: FinalState; failure: FailureInfo | null; alreadyFinal: boolean };

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

/** Back-off before retry `n` (1-based), without jitter. */
export function backoffMs(limits: MachineLimits, n: number): number {
  return backoffDelay({ initialRetryTime: limits.backoffMs, maxRetryTime: limits.maxBackoffMs }, n);
}

/** When a read-back may first prove "not applied": the bound past the last send. */
export function boundAt(state: MachineState, limits: MachineLimits): number {
  return (state.sentBy ?? 0) + limits.maxProcessingMs;
}

function finish(state: MachineState, final: FinalState, failure: FailureInfo | null): Decision {
  return {
    state: { ...state, row: final, checking: null },
    action: { type: 'finish', state: final, failure, alreadyFinal: false },
  };
}

function write(
  state: MachineState,
  waitMs: number,
  pending: FailureInfo | null,
  throttled = false,
): Decision {
  return {
    state: { ...state, row: 'in_flight', checking: null, failure: null, reads: 0 },
    action: { type: 'write', attempt: state.attempts + 1, waitMs, pending, throttled },
  };
}

/** The next read-back of an uncertain write: early reads double their gap, the last is at the bound. */
function nextRead(state: MachineState, limits: MachineLimits, at: number): Decision {
  const bound = boundAt(state, limits);
  const early = (state.sentBy ?? at) + limits.readBackDelayMs * 2 ** state.reads;
  const notBefore = Math.max(at, Math.min(early, bound));
  return {
    state,
    action: { type: 'read_back', notBefore, whyNow: notBefore >= bound ? 'bound' : 'early' },
  };
}

export function decide(state: MachineState, event: GuardEvent, limits: MachineLimits): Decision {
  switch (event.type) {
    case 'started': {
      const s: MachineState = {
        ...state,
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
        const taken: MachineState = {
          ...s,
          sentBy: event.at,
          checking: 'uncertain',
          doubted: true,
          failure: INTERRUPTED,
        };
        return nextRead(taken, limits, event.at);
      }
      // new or pending: every write before this one is proven not applied (or none was sent).
      return s.baseline ? write(s, 0, null) : { state: s, action: { type: 'snapshot' } };
    }

    case 'snapshot_taken':
      return write({ ...state, baseline: true }, 0, null);

    case 'answered': {
      const s: MachineState = { ...state, row: 'in_flight', attempts: state.attempts + 1, sentBy: event.at };
      const f = event.failure;
      if (!f) return finish(s, 'applied', null);
      switch (f.kind) {
        case 'throttled': {
          // Spec 7.4.2: a throttled request was not applied.
          const t = { ...s, throttles: s.throttles + 1 };
          if (t.throttles > limits.maxThrottles) return finish(t, 'exhausted', f);
          return write(t, (f.retryAfterSeconds ?? 1) * 1000, f, true);
        }
        case 'unauthenticated':
          // Not applied; the client already renewed its token once, so the key itself is refused.
          return finish(s, 'rejected', f);
        case 'lock_failed': {
          const l = { ...s, lockRetries: s.lockRetries + 1 };
          if (l.lockRetries > limits.maxLockRetries) return finish(l, 'exhausted', f);
          return write(l, backoffMs(limits, l.lockRetries), f);
        }
        case 'rejected':
          // A refusal after a write in doubt is evidence too: the first write may have landed and
          // be what the platform now refuses a second of (issue 30). Read back before concluding.
          if (s.doubted)
            return {
              state: { ...s, checking: 'refused', failure: f, reads: 0 },
              action: { type: 'read_back', notBefore: event.at, whyNow: 'early' },
            };
          return finish(s, 'rejected', f);
        case 'invalid_state':
          // The write was refused; is the record already where the command wanted it?
          return {
            state: { ...s, checking: 'invalid_state', failure: f, reads: 0 },
            action: { type: 'read_back', notBefore: event.at, whyNow: 'early' },
          };
        case 'uncertain':
          return nextRead(
            { ...s, checking: 'uncertain', doubted: true, failure: f, reads: 0 },
            limits,
            event.at,
          );
      }
      break;
    }

    case 'read': {
      const s: MachineState = { ...state, reads: state.reads + 1 };
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
      return write(r, backoffMs(limits, r.retries), f);
    }
  }
  throw new Error(`guard: no decision for ${JSON.stringify(event)} in ${JSON.stringify(state)}`);
}
