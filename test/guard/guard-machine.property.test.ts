import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type FailureInfo,
  decide,
  initialState,
  type MachineLimits,
} from '../../src/guard/machine/guard-machine.js';
import type { GuardState } from '../../src/guard/store/command-repository.js';
import { WALK_LIMITS, failureInfo, ownersInTurn } from './machine-fixtures.js';

/**
 * The guard's decisions (`decide`) driven against a simulated Partner API over generated
 * histories: writes that succeed, fail applied or not, time out and land late (within or
 * beyond the platform's processing bound), 429 and lock_failed answers, owners that die mid-write
 * or mid-wait and the next owner (a restart or a second process) that takes the row over.
 * Whatever happens, the record must never hold the payment twice, and a final `applied` must
 * mean it holds it once.
 */

const TIMEOUT_MS = 1500;

type Scenario =
  | { kind: 'ok'; ms: number }
  | { kind: 'applied_5xx'; ms: number }
  | { kind: 'failed_5xx'; ms: number }
  | { kind: 'throttled'; ms: number }
  | { kind: 'lock_failed'; ms: number }
  /** Lands `landMs` after the send (never, if at or past the world's bound); the client times out. */
  | { kind: 'late'; landMs: number };

interface History {
  /** One per write, used in turn (cyclically). */
  writes: Scenario[];
  /** Per action: does the owner die right here (a SIGKILL, a rebalance to a second owner)? */
  deaths: boolean[];
  /** How long until the next owner takes the row over. */
  takeoverMs: number[];
}

const scenario = (bound: number): fc.Arbitrary<Scenario> =>
  fc.oneof(
    fc.record({ kind: fc.constant('ok' as const), ms: fc.integer({ min: 1, max: 1000 }) }),
    fc.record({ kind: fc.constant('applied_5xx' as const), ms: fc.integer({ min: 1, max: 1000 }) }),
    fc.record({ kind: fc.constant('failed_5xx' as const), ms: fc.integer({ min: 1, max: 1000 }) }),
    fc.record({ kind: fc.constant('throttled' as const), ms: fc.integer({ min: 1, max: 100 }) }),
    fc.record({ kind: fc.constant('lock_failed' as const), ms: fc.integer({ min: 1, max: 100 }) }),
    // Late writes: within the bound (they land) and beyond it (503 request_timeout, never land).
    fc.record({
      kind: fc.constant('late' as const),
      landMs: fc.integer({ min: 1, max: Math.round(bound * 1.5) }),
    }),
  );

const history = (bound: number): fc.Arbitrary<History> =>
  fc.record({
    writes: fc.array(scenario(bound), { minLength: 1, maxLength: 8 }),
    deaths: fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
    takeoverMs: fc.array(fc.integer({ min: 0, max: bound * 2 }), { minLength: 1, maxLength: 5 }),
  });

function failureOf(kind: FailureInfo['kind'], status: number | null): FailureInfo {
  return failureInfo(kind, { status, retryAfterSeconds: kind === 'throttled' ? 1 : null });
}

interface Run {
  /** Times at which the payment landed on the record (the ledger). */
  landings: number[];
  final: GuardState | null;
  writes: number;
}

/**
 * Runs one history. `worldBoundMs` is the platform's real processing bound; the guard is told
 * `limits.maxProcessingMs`. Deaths are taken only while fewer than 4 owners have died, so every
 * history ends.
 */
function simulate(h: History, limits: MachineLimits, worldBoundMs: number): Run {
  const landings: number[] = [];
  const landedBy = (t: number) => landings.filter((at) => at <= t).length;
  // The guard's row in PostgreSQL: what survives an owner's death.
  const row = { state: 'new' as 'new' | GuardState, attempts: 0, baseline: null as number | null };
  let now = 0;
  let writes = 0;
  let deaths = 0;
  let step = 0;
  const dies = () => deaths < 4 && (h.deaths[step++ % h.deaths.length] ?? false);

  /** One owner's walk: the final state, or null when it died (the row stays as committed). */
  const owner = (): GuardState | null => {
    let d = decide(
      initialState(),
      { type: 'started', at: now, row: row.state, attempts: row.attempts, baseline: row.baseline != null },
      limits,
    );
    let baseline = row.baseline;
    for (let actions = 0; actions < 500; actions++) {
      const a = d.action;
      if (a.type === 'finish') {
        if (!a.alreadyFinal) row.state = a.state;
        return a.state;
      }
      if (a.type === 'snapshot') {
        baseline = landedBy(now);
        d = decide(d.state, { type: 'snapshot_taken', at: now }, limits);
      } else if (a.type === 'read_back') {
        if (dies()) return null;
        now = Math.max(now, a.notBefore);
        const verdict = landedBy(now) > (baseline ?? 0) ? 'applied' : 'not_applied';
        d = decide(d.state, { type: 'read', at: now, verdict }, limits);
      } else if (a.type === 'write') {
        if (a.pending) row.state = 'pending';
        now += a.waitMs;
        if (dies()) return null;
        row.state = 'in_flight';
        row.attempts = a.attempt;
        row.baseline ??= baseline;
        const sentAt = now;
        const s = h.writes[writes++ % h.writes.length]!;
        let failure: FailureInfo | null = null;
        if (s.kind === 'late') {
          // The platform applies it when its processing ends, unless that is past its bound
          // (then it answers 503 request_timeout, if the client still waits).
          if (s.landMs < worldBoundMs) landings.push(sentAt + s.landMs);
          now = sentAt + Math.min(TIMEOUT_MS, s.landMs >= worldBoundMs ? worldBoundMs : TIMEOUT_MS);
          failure = failureOf('uncertain', null);
        } else {
          if (s.kind === 'ok' || s.kind === 'applied_5xx') landings.push(sentAt + s.ms);
          now = sentAt + s.ms;
          if (s.kind === 'applied_5xx') failure = failureOf('uncertain', 500);
          if (s.kind === 'failed_5xx') failure = failureOf('uncertain', 503);
          if (s.kind === 'throttled') failure = failureOf('throttled', 429);
          if (s.kind === 'lock_failed') failure = failureOf('lock_failed', 409);
        }
        // The owner may die with the write on its way: no answer is recorded.
        if (dies()) return null;
        d = decide(d.state, { type: 'answered', at: now, failure }, limits);
      } else {
        throw new Error(`unexpected action ${a.type}`);
      }
    }
    throw new Error('the guard did not finish within 500 actions');
  };

  const final = ownersInTurn(owner, () => {
    deaths++;
    now += h.takeoverMs[deaths % h.takeoverMs.length] ?? 0;
    return true;
  });
  return { landings, final, writes };
}

const LIMITS = WALK_LIMITS;

/** The property: never two landings; `applied` means exactly one; `exhausted`/`rejected` none. */
function holds(run: Run): boolean {
  if (run.landings.length > 1) return false;
  if (run.final === 'applied' || run.final === 'already_applied') return run.landings.length === 1;
  if (run.final === 'exhausted' || run.final === 'rejected') return run.landings.length === 0;
  return true; // unverified: parked for ops, whatever happened
}

describe('guard decisions over generated histories', () => {
  describe("when the guard knows the platform's processing bound", () => {
    it('never applies a payment twice, and its final state agrees with the record', () => {
      fc.assert(
        fc.property(history(LIMITS.maxProcessingMs), (h) => {
          const run = simulate(h, LIMITS, LIMITS.maxProcessingMs);
          expect(run.landings.length, JSON.stringify(run)).toBeLessThanOrEqual(1);
          expect(holds(run), JSON.stringify(run)).toBe(true);
        }),
        { numRuns: 3000 },
      );
    });
  });

  describe('when the platform may finish a write later than the guard assumes', () => {
    it('finds a history that applies it twice (the property can fail)', () => {
      const wrong = { ...LIMITS, maxProcessingMs: 1000 };
      const result = fc.check(
        fc.property(history(LIMITS.maxProcessingMs), (h) =>
          holds(simulate(h, wrong, LIMITS.maxProcessingMs)),
        ),
        { numRuns: 3000 },
      );
      expect(result.failed).toBe(true);
    });
  });
});
