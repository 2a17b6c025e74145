import { describe, expect, it } from 'vitest';
import {
  decide,
  initialState,
  INTERRUPTED,
  type GuardAction,
  type GuardEvent,
  type MachineState,
} from '../../src/guard/machine/guard-machine.js';
import { LIMITS, failureInfo } from './machine-fixtures.js';

const failure = failureInfo;

function state(overrides: Partial<MachineState> = {}): MachineState {
  return { ...initialState(), ...overrides };
}

/** A state just after write `attempts` ended uncertainly at `sentBy`. */
const checking = (overrides: Partial<MachineState> = {}) =>
  state({
    row: 'in_flight',
    attempts: 1,
    baseline: true,
    sentBy: 10_000,
    checking: 'uncertain',
    failure: failure('uncertain'),
    ...overrides,
  });

interface Case {
  when: string;
  state: MachineState;
  event: GuardEvent;
  then: Partial<GuardAction>;
}

// Rows of DESIGN.md's table ("The guarded write"), each with the action it must lead to.
const CASES: Case[] = [
  {
    when: 'a new command has no baseline yet',
    state: state(),
    event: { type: 'started', at: 0, row: 'new', attempts: 0, baseline: false },
    then: { type: 'snapshot' },
  },
  {
    when: 'the baseline was read',
    state: state(),
    event: { type: 'snapshot_taken', at: 0 },
    then: { type: 'write', attempt: 1, waitMs: 0, pending: null },
  },
  {
    when: 'a pending row already has its baseline (a retry after a restart)',
    state: state(),
    event: { type: 'started', at: 0, row: 'pending', attempts: 2, baseline: true },
    then: { type: 'write', attempt: 3 },
  },
  {
    when: 'the row is final (a redelivery or a redrive)',
    state: state(),
    event: { type: 'started', at: 0, row: 'applied', attempts: 1, baseline: true },
    then: { type: 'finish', state: 'applied', alreadyFinal: true },
  },
  {
    when: 'a row is found in flight with its baseline',
    state: state(),
    event: { type: 'started', at: 5000, row: 'in_flight', attempts: 1, baseline: true },
    then: { type: 'read_back', notBefore: 6000, whyNow: 'early' },
  },
  {
    when: 'a row is found in flight without a baseline',
    state: state(),
    event: { type: 'started', at: 5000, row: 'in_flight', attempts: 1, baseline: false },
    then: { type: 'finish', state: 'unverified', failure: INTERRUPTED },
  },
  {
    when: 'the write answered 2xx',
    state: state({ baseline: true }),
    event: { type: 'answered', at: 1, failure: null },
    then: { type: 'finish', state: 'applied' },
  },
  {
    when: 'the write answered 429',
    state: state({ baseline: true }),
    event: { type: 'answered', at: 1, failure: failure('throttled', { status: 429, retryAfterSeconds: 3 }) },
    then: { type: 'write', attempt: 2, waitMs: 3000, throttled: true },
  },
  {
    when: 'the write answered 429 once too often',
    state: state({ baseline: true, throttles: 2 }),
    event: { type: 'answered', at: 1, failure: failure('throttled', { status: 429 }) },
    then: { type: 'finish', state: 'exhausted' },
  },
  {
    when: 'the write answered 401 after the client renewed its token',
    state: state({ baseline: true }),
    event: { type: 'answered', at: 1, failure: failure('unauthenticated', { status: 401 }) },
    then: { type: 'finish', state: 'rejected' },
  },
  {
    when: 'the write answered 409 lock_failed',
    state: state({ baseline: true }),
    event: { type: 'answered', at: 1, failure: failure('lock_failed', { status: 409 }) },
    then: { type: 'write', attempt: 2, waitMs: 100 },
  },
  {
    when: 'the write answered 409 lock_failed past the bound of retries',
    state: state({ baseline: true, lockRetries: 2 }),
    event: { type: 'answered', at: 1, failure: failure('lock_failed', { status: 409 }) },
    then: { type: 'finish', state: 'exhausted' },
  },
  {
    when: 'the write answered another 4xx',
    state: state({ baseline: true }),
    event: { type: 'answered', at: 1, failure: failure('rejected', { status: 422 }) },
    then: { type: 'finish', state: 'rejected' },
  },
  {
    when: 'the write answered 409 invalid_state_transition',
    state: state({ baseline: true }),
    event: { type: 'answered', at: 7, failure: failure('invalid_state', { status: 409 }) },
    then: { type: 'read_back', notBefore: 7 },
  },
  {
    when: 'the record of a 409 invalid_state_transition is in the target state',
    state: checking({ checking: 'invalid_state', failure: failure('invalid_state') }),
    event: { type: 'read', at: 10_001, verdict: 'applied' },
    then: { type: 'finish', state: 'already_applied' },
  },
  {
    when: 'the record of a 409 invalid_state_transition is elsewhere',
    state: checking({ checking: 'invalid_state', failure: failure('invalid_state') }),
    event: { type: 'read', at: 10_001, verdict: 'not_applied' },
    then: { type: 'finish', state: 'rejected' },
  },
  {
    when: 'the write timed out (5xx, network error)',
    state: state({ baseline: true }),
    event: { type: 'answered', at: 10_000, failure: failure('uncertain') },
    then: { type: 'read_back', notBefore: 11_000, whyNow: 'early' },
  },
  {
    when: 'an early read-back finds the write applied',
    state: checking(),
    event: { type: 'read', at: 11_000, verdict: 'applied' },
    then: { type: 'finish', state: 'applied' },
  },
  {
    when: 'an early read-back finds the record unchanged (the write may land yet)',
    state: checking({ reads: 0 }),
    event: { type: 'read', at: 11_000, verdict: 'not_applied' },
    then: { type: 'read_back', notBefore: 12_000 },
  },
  {
    when: 'an early read-back cannot tell',
    state: checking({ reads: 0 }),
    event: { type: 'read', at: 11_000, verdict: 'unknown' },
    then: { type: 'read_back', notBefore: 12_000 },
  },
  {
    when: 'the next early read would fall past the bound',
    state: checking({ reads: 5 }),
    event: { type: 'read', at: 26_000, verdict: 'not_applied' },
    then: { type: 'read_back', notBefore: 40_000, whyNow: 'bound' },
  },
  {
    when: 'a read made one millisecond before the bound finds the record unchanged',
    state: checking({ reads: 6 }),
    event: { type: 'read', at: 39_999, verdict: 'not_applied' },
    then: { type: 'read_back', notBefore: 40_000, whyNow: 'bound' },
  },
  {
    when: 'a read made at the bound finds the record unchanged',
    state: checking({ reads: 6 }),
    event: { type: 'read', at: 40_000, verdict: 'not_applied' },
    then: { type: 'write', attempt: 2, waitMs: 100 },
  },
  {
    when: 'a read made past the bound cannot tell',
    state: checking({ reads: 6 }),
    event: { type: 'read', at: 40_000, verdict: 'unknown' },
    then: { type: 'finish', state: 'unverified' },
  },
  {
    when: 'a read past the bound finds it unchanged, retries spent',
    state: checking({ reads: 6, retries: 2 }),
    event: { type: 'read', at: 40_000, verdict: 'not_applied' },
    then: { type: 'finish', state: 'exhausted' },
  },
  {
    when: 'a retry after a write in doubt is refused (an e-mail taken, a second enrollment)',
    state: state({ baseline: true, attempts: 1, doubted: true }),
    event: { type: 'answered', at: 50_000, failure: failure('rejected', { status: 422 }) },
    then: { type: 'read_back', notBefore: 50_000, whyNow: 'early' },
  },
  {
    when: 'the read after that refusal finds the first write applied',
    state: checking({ checking: 'refused', doubted: true, failure: failure('rejected', { status: 422 }) }),
    event: { type: 'read', at: 50_001, verdict: 'applied' },
    then: { type: 'finish', state: 'applied' },
  },
  {
    when: 'the read after that refusal finds nothing of ours',
    state: checking({ checking: 'refused', doubted: true, failure: failure('rejected', { status: 422 }) }),
    event: { type: 'read', at: 50_001, verdict: 'not_applied' },
    then: { type: 'finish', state: 'rejected' },
  },
  {
    when: 'the read after that refusal cannot tell',
    state: checking({ checking: 'refused', doubted: true, failure: failure('rejected', { status: 422 }) }),
    event: { type: 'read', at: 50_001, verdict: 'unknown' },
    then: { type: 'finish', state: 'unverified' },
  },
];

describe('guard state machine (decide)', () => {
  for (const c of CASES) {
    describe(`when ${c.when}`, () => {
      it(`answers ${c.then.type}${c.then.type === 'finish' ? ` ${c.then.state}` : ''}`, () => {
        expect(decide(c.state, c.event, LIMITS).action).toMatchObject(c.then);
      });
    });
  }

  describe('when a run started with writes behind it is refused', () => {
    it('reads back before calling it rejected', () => {
      const started = decide(
        initialState(),
        { type: 'started', at: 0, row: 'pending', attempts: 2, baseline: true },
        LIMITS,
      );
      const refused = decide(
        started.state,
        { type: 'answered', at: 10, failure: failure('rejected', { status: 422 }) },
        LIMITS,
      );
      expect(refused.action).toMatchObject({ type: 'read_back', notBefore: 10 });
    });
  });

  describe('when a write is retried after a proven not-applied', () => {
    it('keeps the baseline and takes no new snapshot', () => {
      const d = decide(checking({ reads: 6 }), { type: 'read', at: 40_000, verdict: 'not_applied' }, LIMITS);
      expect(d.action.type).toBe('write');
      expect(d.state.baseline).toBe(true);
      const next = decide(d.state, { type: 'answered', at: 50_000, failure: failure('uncertain') }, LIMITS);
      // The bound now counts from the second write's end.
      expect(next.action).toMatchObject({ type: 'read_back', notBefore: 51_000 });
      expect(next.state).toMatchObject({ attempts: 2, sentBy: 50_000, reads: 0 });
    });
  });

  describe('when a row is taken over in flight', () => {
    it('counts the bound from the takeover, not from the earlier send', () => {
      let d = decide(
        state(),
        { type: 'started', at: 100_000, row: 'in_flight', attempts: 1, baseline: true },
        LIMITS,
      );
      for (let i = 0; i < 10 && d.action.type === 'read_back'; i++) {
        const at = d.action.notBefore;
        if (at >= 130_000) break;
        d = decide(d.state, { type: 'read', at, verdict: 'not_applied' }, LIMITS);
      }
      expect(d.action).toMatchObject({ type: 'read_back', notBefore: 130_000, whyNow: 'bound' });
    });
  });
});
