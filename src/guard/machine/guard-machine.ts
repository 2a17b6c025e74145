import { answered, read, readFailed, snapshotTaken, started } from './guard-walk.js';
import {
  began,
  checked,
  created,
  ensured,
  loaded,
  locked,
  looked,
  noted,
  snapshotFailed,
  snapshotRead,
} from './guard-opening.js';
import type { Decision, GuardEvent, MachineLimits, MachineState, Phase } from './guard-policy.js';

export {
  backoffMs,
  boundAt,
  initialState,
  INTERRUPTED,
  jittered,
  type Decision,
  type GuardAction,
  type GuardEvent,
  type MachineLimits,
  type MachineState,
  type Note,
  type Phase,
  type Prelude,
  type Wait,
} from './guard-policy.js';

/**
 * The guarded write's decisions, as ONE pure state machine written from DESIGN.md's table ("The
 * guarded write"): `decide(state, event)` answers the next state and the one action the driver
 * (guarded-write.ts) performs, which then reports what happened as the next event. Every change
 * to a command's row is one of its actions: looking the row up and the optional check before the
 * lock (guard-opening.ts), the fast path (snapshot and row created in flight while the lock is
 * tried), taking or waiting for the lock, loading the row, the baseline, the write, the
 * read-backs and their retries, parking as unverified, the final state (guard-walk.ts); the
 * redrive's reset is its `redriveReset` below. No I/O and no clock here: every time (and the
 * spread of every back-off) is carried by the events, so the whole policy is tested with tables
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
