import { describe, expect, it } from 'vitest';
import {
  decide,
  initialState,
  redriveReset,
  type Decision,
  type GuardAction,
  type GuardEvent,
  type MachineLimits,
  type MachineState,
} from '../../src/guard/machine/guard-machine.js';
import type { Snapshot } from '../../src/guard/read-backs/read-back.js';
import {
  LIMITS as TABLE_LIMITS,
  TIMED_OUT,
  UNAVAILABLE,
  commandRecord,
  failureInfo,
} from './machine-fixtures.js';

/**
 * The states the guard machine gained when it took over the whole life of a command row
 * (issue 26 item 2): the check before the lock, the fast path (snapshot and row created while
 * the lock is tried), waiting for a lock another process holds, loading the row, reads retried
 * with a spread back-off, and the redrive's reset. Each row of the table: a state, an event, the
 * action it must lead to.
 */

const LIMITS: MachineLimits = { ...TABLE_LIMITS, maxReadRetries: 2, lockWaitMs: 5000 };

const COMMAND = { payment_id: 'p-1', amount: 10 };
const SNAPSHOT: Snapshot = { found: true, status: 'active', updated_at: 'x', taken_at: 'y' };

const row = commandRecord;

const began = (check: boolean): Decision =>
  decide(initialState(), { type: 'began', commandId: 'p-1', base: 'p-1', payload: COMMAND, check }, LIMITS);

function state(phase: MachineState['phase'], overrides: Partial<MachineState> = {}): MachineState {
  return { ...began(false).state, phase, ...overrides };
}

const early = {
  snapshot: SNAPSHOT,
  step: { attempt: 0, requestId: 'p-1.a0.r1', kind: 'snapshot' as const, result: 'read' },
};
const refusal = { code: 'email_taken', status: 422, message: 'no', details: { email: 'taken' } };
const throttled = Object.assign(new Error('429'), {
  status: 429,
  code: 'rate_limited',
  retryAfterSeconds: 2,
});
const shape = Object.assign(new Error('items is not a list'), { name: 'PartnerResponseError' });
const failed = (error: unknown, at = 1000): GuardEvent => ({
  type: 'read_failed',
  at,
  error,
  readIds: 1,
  startedAt: 900,
  rand: 0.5,
});

interface Case {
  when: string;
  state: MachineState;
  event: GuardEvent;
  then: { type: GuardAction['type'] } & Record<string, unknown>;
}

const CASES: Case[] = [
  {
    when: 'a command without a check begins',
    state: initialState(),
    event: { type: 'began', commandId: 'p-1', base: 'p-1', payload: COMMAND, check: false },
    then: { type: 'snapshot', tryLock: true },
  },
  {
    when: 'a command with a check begins',
    state: initialState(),
    event: { type: 'began', commandId: 'p-1', base: 'p-1', payload: COMMAND, check: true },
    then: { type: 'look' },
  },
  {
    when: 'the command has no row yet',
    state: state('look'),
    event: { type: 'looked', record: null },
    then: { type: 'check' },
  },
  {
    when: 'its row was put back before any write (a corrected command)',
    state: state('look'),
    event: { type: 'looked', record: row() },
    then: { type: 'check' },
  },
  {
    when: 'its row shows a write was made',
    state: state('look'),
    event: { type: 'looked', record: row({ state: 'in_flight', attempts: 1 }) },
    then: { type: 'snapshot', tryLock: true },
  },
  {
    when: 'the row is another command under the same id',
    state: state('look'),
    event: { type: 'looked', record: row({ payload: { other: true } }) },
    then: { type: 'snapshot', tryLock: true },
  },
  {
    when: 'the check passes',
    state: state('check'),
    event: { type: 'checked', refusal: null },
    then: { type: 'snapshot', tryLock: true },
  },
  {
    when: 'the check refuses',
    state: state('check'),
    event: { type: 'checked', refusal },
    then: { type: 'ensure' },
  },
  {
    when: 'the refused command has its row',
    state: state('check', { refusal }),
    event: { type: 'ensured', record: row() },
    then: { type: 'finish', state: 'rejected', alreadyFinal: false, error: refusal },
  },
  {
    when: 'the fast path read the snapshot',
    state: state('open'),
    event: { type: 'snapshot_taken', at: 1000, snapshot: SNAPSHOT, readIds: 1, startedAt: 900 },
    then: { type: 'create', snapshot: SNAPSHOT },
  },
  {
    when: 'the row was created in flight',
    state: state('open', { early }),
    event: { type: 'created', record: row({ state: 'in_flight', attempts: 1 }) },
    then: { type: 'lock', waitMs: 0 },
  },
  {
    when: 'the row could not be created (it exists)',
    state: state('open', { early }),
    event: { type: 'created', record: null },
    then: { type: 'lock', waitMs: 0 },
  },
  {
    when: 'the fast path snapshot failed once',
    state: state('open'),
    event: failed(UNAVAILABLE),
    then: { type: 'snapshot', wait: { until: 1100, throttled: false, step: null } },
  },
  {
    when: 'the fast path snapshot failed past its retries',
    state: state('open', { readFailures: 2 }),
    event: failed(UNAVAILABLE),
    then: { type: 'lock', waitMs: 0 },
  },
  {
    when: 'the lock came at once for a row created in flight',
    state: state('lock', {
      early,
      begun: true,
      record: row({ state: 'in_flight', attempts: 1, requestIds: ['p-1.a1'] }),
    }),
    event: { type: 'locked', at: 1000, held: true },
    then: { type: 'write', attempt: 1, begun: true, requestId: 'p-1.a1' },
  },
  {
    when: 'the lock came at once for a row that exists',
    state: state('lock', { early }),
    event: { type: 'locked', at: 1000, held: true },
    then: { type: 'load' },
  },
  {
    when: 'another process holds the lock',
    state: state('lock', { early, begun: true }),
    event: { type: 'locked', at: 1000, held: false },
    then: { type: 'lock', waitMs: 5000 },
  },
  {
    when: 'it still holds it after the wait',
    state: state('lock', { lockWaited: true }),
    event: { type: 'locked', at: 1000, held: false },
    then: { type: 'stop', busy: true, conflict: false },
  },
  {
    when: 'the row is another command under the same id (under the lock)',
    state: state('lock'),
    event: { type: 'loaded', at: 1000, record: row({ payload: { other: true } }) },
    then: { type: 'stop', conflict: true },
  },
  {
    when: 'the row is found in flight',
    state: state('lock'),
    event: { type: 'loaded', at: 1000, record: row({ state: 'in_flight', attempts: 1, snapshot: SNAPSHOT }) },
    then: { type: 'note_interrupted', attempt: 1 },
  },
  {
    when: 'the in-flight write is noted interrupted',
    state: state('lock', { record: row({ state: 'in_flight', attempts: 1, snapshot: SNAPSHOT }) }),
    event: { type: 'noted', at: 5000 },
    then: { type: 'read_back', notBefore: 6000 },
  },
  {
    when: 'the row is final',
    state: state('lock'),
    event: { type: 'loaded', at: 1000, record: row({ state: 'applied', attempts: 1 }) },
    then: { type: 'finish', state: 'applied', alreadyFinal: true },
  },
  {
    when: 'the row is pending and the fast path snapshot is at hand',
    state: state('lock', { early }),
    event: { type: 'loaded', at: 1000, record: row() },
    then: { type: 'write', attempt: 1, begun: false, steps: [early.step] },
  },
  {
    when: 'a snapshot under the lock failed',
    state: state('walk'),
    event: failed(UNAVAILABLE),
    then: { type: 'snapshot', wait: { until: 1100, throttled: false } },
  },
  {
    when: 'a snapshot under the lock was throttled',
    state: state('walk'),
    event: failed(throttled),
    then: { type: 'snapshot', wait: { until: 3000, throttled: true } },
  },
  {
    when: 'a snapshot under the lock failed past its retries',
    state: state('walk', { readFailures: 2 }),
    event: failed(UNAVAILABLE),
    then: { type: 'stop', busy: false, conflict: false, message: 'snapshot failed: 503' },
  },
  {
    when: 'a read-back failed',
    state: state('walk', { checking: 'uncertain', sentBy: 0, attempts: 1, baseline: true }),
    event: failed(UNAVAILABLE),
    then: { type: 'read_back', notBefore: 1100 },
  },
  {
    when: 'a read-back answer has a shape the client does not know',
    state: state('walk', { checking: 'uncertain', sentBy: 0, attempts: 1, baseline: true }),
    event: failed(shape, 40_000),
    then: { type: 'finish', state: 'unverified' },
  },
];

describe('guard state machine: the row, the check, the lock and read retries', () => {
  for (const c of CASES) {
    describe(`when ${c.when}`, () => {
      it(`answers ${String(c.then.type)}`, () => {
        expect(decide(c.state, c.event, LIMITS).action).toMatchObject(c.then);
      });
    });
  }

  describe('when a read fails again and again', () => {
    it('spreads the back-off by the reported random number and doubles it per failure', () => {
      const at = (rand: number, readFailures: number) =>
        decide(state('walk', { readFailures }), { ...failed(UNAVAILABLE), rand } as GuardEvent, LIMITS).action
          .wait?.until;
      expect(at(0, 0)).toBe(1075);
      expect(at(0.999, 0)).toBe(1125);
      expect(at(0.5, 1)).toBe(1200);
    });
  });

  describe("when a read-back cannot tell because of the answer's shape", () => {
    it("says so in the unverified row's error", () => {
      const s = state('walk', {
        checking: 'uncertain',
        sentBy: 0,
        attempts: 1,
        baseline: true,
        failure: TIMED_OUT,
      });
      const d = decide(s, failed(shape, 40_000), LIMITS);
      expect(d.action).toMatchObject({
        type: 'finish',
        error: { message: expect.stringContaining("the answer's shape is not recognised") },
      });
    });
  });

  describe('when a write is retried after a lock_failed', () => {
    it("waits the back-off spread by the answer's random number, and keeps the wait as a step", () => {
      const s = state('walk', { baseline: true, snapshot: SNAPSHOT, row: 'in_flight' });
      const failure = failureInfo('lock_failed', { status: 409, message: 'x' });
      const d = decide(s, { type: 'answered', at: 1000, failure, rand: 0 }, LIMITS);
      expect(d.action).toMatchObject({
        type: 'write',
        waitMs: 100,

        markPending: { code: 'lock_failed' },
        wait: { until: 1075, step: { message: 'back-off before write attempt 2' } },
      });
    });
  });

  describe('when a whole first-seen command is walked', () => {
    it('goes snapshot, create, lock, write, finish with no row state kept outside the machine', () => {
      let d = began(false);
      const seen: string[] = [d.action.type];
      const events: GuardEvent[] = [
        { type: 'snapshot_taken', at: 10, snapshot: SNAPSHOT, readIds: 1, startedAt: 5 },
        {
          type: 'created',
          record: row({ state: 'in_flight', attempts: 1, snapshot: SNAPSHOT, requestIds: ['p-1.a1'] }),
        },
        { type: 'locked', at: 20, held: true },
        { type: 'answered', at: 30, failure: null, status: 201 },
      ];
      for (const e of events) {
        d = decide(d.state, e, LIMITS);
        seen.push(d.action.type);
      }
      expect(seen).toEqual(['snapshot', 'create', 'lock', 'write', 'finish']);
      expect(d.action).toMatchObject({
        state: 'applied',
        settle: {
          attempt: 1,
          status: 201,
          record: { state: 'applied', attempts: 1, requestIds: ['p-1.a1'], snapshot: SNAPSHOT },
        },
      });
    });
  });
});

describe('redrive reset (redriveReset)', () => {
  const cases: [string, boolean, string | null][] = [
    ['rejected', true, 'pending'],
    ['exhausted', false, 'pending'],
    ['unverified', true, 'in_flight'],
    ['unverified', false, 'pending'],
    ['applied', true, null],
    ['already_applied', true, null],
    ['pending', true, null],
    ['in_flight', true, null],
  ];
  for (const [from, hasSnapshot, to] of cases) {
    it(`puts a ${from} row${hasSnapshot ? ' with its snapshot' : ''} back to ${to ?? 'nothing (not reset)'}`, () => {
      expect(redriveReset(from, hasSnapshot)).toBe(to);
    });
  }
});
