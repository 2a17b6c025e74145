import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CommandRecord, GuardState } from '../../src/guard/machine/command-record.js';
import { decide, initialState, type MachineLimits } from '../../src/guard/machine/guard-machine.js';
import type { Snapshot } from '../../src/guard/read-backs/read-back.js';
import { TIMED_OUT, UNAVAILABLE, WALK_LIMITS, commandRecord, ownersInTurn } from './machine-fixtures.js';

/**
 * The whole life of a command row driven by `decide` alone, from `began` to the final state:
 * the fast path (snapshot, row created in flight), the lock, loading a row an earlier owner left,
 * writes that succeed, fail, time out or land late, reads that fail transiently (retried, or
 * given up: the command is tried again later by a new owner), and owners that die anywhere.
 * Whatever happens, the record must never hold the payment twice, and `applied` must mean once.
 */

type Write = 'ok' | 'applied_5xx' | 'failed_5xx' | 'late' | 'lost_late';

interface History {
  writes: Write[];
  /** Per read (snapshot or read-back): does it fail transiently? */
  readFails: boolean[];
  deaths: boolean[];
}

const history: fc.Arbitrary<History> = fc.record({
  writes: fc.array(fc.constantFrom<Write>('ok', 'applied_5xx', 'failed_5xx', 'late', 'lost_late'), {
    minLength: 1,
    maxLength: 6,
  }),
  readFails: fc.array(fc.boolean(), { minLength: 1, maxLength: 30 }),
  deaths: fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
});

const LIMITS: MachineLimits = { ...WALK_LIMITS, maxReadRetries: 2, lockWaitMs: 1000 };

const PAYLOAD = { payment_id: 'p-1' };
const uncertain = TIMED_OUT;

interface Row {
  state: GuardState;
  attempts: number;
  snapshot: Snapshot | null;
}

function recordOf(row: Row): CommandRecord {
  return commandRecord({ payload: PAYLOAD, ...row });
}

function simulate(h: History, limits: MachineLimits = LIMITS) {
  const LIMITS = limits;
  const landings: number[] = [];
  const landedBy = (t: number) => landings.filter((at) => at <= t).length;
  let row: Row | null = null;
  let now = 0;
  let writes = 0;
  let reads = 0;
  let deaths = 0;
  let step = 0;
  const dies = () => deaths < 4 && (h.deaths[step++ % h.deaths.length] ?? false);
  const readFails = () => h.readFails[reads++ % h.readFails.length] ?? false;

  const owner = (): GuardState | null => {
    let d = decide(
      initialState(),
      { type: 'began', commandId: 'p-1', base: 'p-1', payload: PAYLOAD, check: false },
      LIMITS,
    );
    for (let n = 0; n < 500; n++) {
      const a = d.action;
      if (a.markPending && row) row.state = 'pending';
      if (a.wait) now = Math.max(now, a.wait.until);
      if (dies()) return null;
      switch (a.type) {
        case 'finish':
          if (!a.alreadyFinal) row!.state = a.state;
          return a.state;
        case 'stop':
          return null; // reads given up: the consumer tries the command again later
        case 'snapshot':
        case 'read_back': {
          if (a.type === 'read_back') now = Math.max(now, a.notBefore);
          if (readFails()) {
            d = decide(
              d.state,
              { type: 'read_failed', at: now, error: UNAVAILABLE, readIds: 1, startedAt: now, rand: 0.5 },
              LIMITS,
            );
            break;
          }
          const count = landedBy(now);
          if (a.type === 'snapshot') {
            const snapshot = { found: true, status: null, updated_at: null, taken_at: '', count };
            d = decide(
              d.state,
              { type: 'snapshot_taken', at: now, snapshot, readIds: 1, startedAt: now },
              LIMITS,
            );
          } else {
            const verdict = count > (d.state.snapshot!.count as number) ? 'applied' : 'not_applied';
            d = decide(d.state, { type: 'read', at: now, verdict, readIds: 1, startedAt: now }, LIMITS);
          }
          break;
        }
        case 'create': {
          const fresh = row === null;
          row ??= { state: 'in_flight', attempts: 1, snapshot: a.snapshot };
          d = decide(d.state, { type: 'created', record: fresh ? recordOf(row) : null }, LIMITS);
          break;
        }
        case 'lock':
          d = decide(d.state, { type: 'locked', at: now, held: true }, LIMITS);
          break;
        case 'load':
          row ??= { state: 'pending', attempts: 0, snapshot: null };
          d = decide(d.state, { type: 'loaded', at: now, record: recordOf(row) }, LIMITS);
          break;
        case 'note_interrupted':
          d = decide(d.state, { type: 'noted', at: now }, LIMITS);
          break;
        case 'write': {
          if (!a.begun)
            row = { state: 'in_flight', attempts: a.attempt, snapshot: row!.snapshot ?? d.state.snapshot };
          const sentAt = now;
          const w = h.writes[writes++ % h.writes.length]!;
          if (w === 'ok' || w === 'applied_5xx') landings.push(sentAt + 10);
          if (w === 'late') landings.push(sentAt + 2700); // 1.2 s after its time-out: within the bound
          now = sentAt + (w === 'late' || w === 'lost_late' ? 1500 : 10);
          if (dies()) return null;
          d = decide(
            d.state,
            { type: 'answered', at: now, failure: w === 'ok' ? null : uncertain, status: 201 },
            LIMITS,
          );
          break;
        }
        default:
          throw new Error(`unexpected action ${a.type}`);
      }
    }
    throw new Error('the guard did not finish within 500 actions');
  };

  const final = ownersInTurn(owner, () => {
    deaths++;
    now += 500;
    return deaths <= 50;
  });
  return { landings, final, writes };
}

describe('the whole walk of a command row over generated histories', () => {
  it('never applies a payment twice, and its final state agrees with the record', () => {
    fc.assert(
      fc.property(history, (h) => {
        const run = simulate(h);
        expect(run.landings.length, JSON.stringify(run)).toBeLessThanOrEqual(1);
        if (run.final === 'applied') expect(run.landings, JSON.stringify(run)).toHaveLength(1);
        if (run.final === 'exhausted' || run.final === 'rejected') expect(run.landings).toHaveLength(0);
      }),
      { numRuns: 2000 },
    );
  });

  it('finds a history that applies it twice when the bound is shorter than the platform takes (the property can fail)', () => {
    const wrong = { ...LIMITS, maxProcessingMs: 1000 };
    const result = fc.check(
      fc.property(history, (h) => simulate(h, wrong).landings.length <= 1),
      { numRuns: 2000 },
    );
    expect(result.failed).toBe(true);
  });
});
