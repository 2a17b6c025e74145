import { classifyFailure, type FailureInfo } from './classify-failure.js';
import type { GuardState } from './command-record.js';
import {
  backoffMs,
  boundAt,
  finish,
  INTERRUPTED,
  jittered,
  nextRead,
  readBack,
  readStep,
  snapshotWords,
  verdictReason,
  write,
  type Decision,
  type GuardAction,
  type GuardEvent,
  type MachineLimits,
  type MachineState,
} from './guard-policy.js';
import type { Snapshot } from '../read-backs/read-back.js';

/**
 * The guard's rules once the command's lock is held and its row known (DESIGN.md, "The guarded
 * write"): read the baseline, write, read back after an answer in doubt, retry what is proven
 * not applied, park what cannot be told. Pure: every time and every spread of a back-off comes
 * with the events.
 */

type Of<T extends GuardEvent['type']> = Extract<GuardEvent, { type: T }>;

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
  const { result, message } = snapshotWords(snapshot);
  const step = readStep(
    state,
    'snapshot',
    event.readIds ?? state.readIds,
    event.startedAt ?? event.at,
    result,
    message,
  );
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
      return readBack(
        { ...s, checking: 'refused', failure: f, reads: 0 },
        limits,
        event.at,
        event.at,
        'early',
      );
    case 'invalid_state':
      // The write was refused; is the record already where the command wanted it?
      return readBack(
        { ...s, checking: 'invalid_state', failure: f, reads: 0 },
        limits,
        event.at,
        event.at,
        'early',
      );
    case 'uncertain':
      return nextRead({ ...s, checking: 'uncertain', doubted: true, failure: f, reads: 0 }, limits, event.at);
  }
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
