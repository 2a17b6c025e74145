import { sameContent } from './command-record.js';
import {
  initialState,
  readStep,
  snapshotWords,
  type Decision,
  type GuardEvent,
  type MachineLimits,
  type MachineState,
} from './guard-policy.js';
import { finish } from './guard-policy.js';
import { readFailed, startedFrom } from './guard-walk.js';

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

/** The fast path's snapshot: the row is created in flight with it. */
export function snapshotRead(state: MachineState, event: Of<'snapshot_taken'>): Decision {
  const snapshot = event.snapshot!;
  const { result, message } = snapshotWords(snapshot);
  const step = readStep(
    state,
    'snapshot',
    event.readIds ?? state.readIds,
    event.startedAt ?? event.at,
    result,
    message,
  );
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
