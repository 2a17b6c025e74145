import type { Resource } from '../partner/resources.js';

/** How a pass of a resource ended; `skipped`: another process (or pass) is polling it right now. */
export type PassOutcome = 'completed' | 'skipped' | 'failed';

/** What the poller's /readyz tells of its passes, per resource. */
export interface ResourcePassState {
  /** The outcome of the resource's latest pass (`skipped`: another process polls it now). */
  last: PassOutcome;
  at: string;
  /** Failed passes in a row (0 after a completed one). */
  failuresInARow: number;
  lastSuccessAt: string | null;
  error?: string;
}

export interface PassHealth {
  record(summary: { resource: Resource; outcome: PassOutcome; error?: string }): void;
  /**
   * `true` while some pass succeeds; the reason when the latest pass of every resource this process
   * tried failed (the Partner API or PostgreSQL is away: nothing is being caught up). Skipped
   * passes are another process's work and never count against this one.
   */
  check(): true | string;
  details(): Partial<Record<Resource, ResourcePassState>>;
}

export function createPassHealth(): PassHealth {
  const states = new Map<Resource, ResourcePassState>();
  return {
    record({ resource, outcome, error }) {
      const before = states.get(resource);
      const at = new Date().toISOString();
      if (outcome === 'skipped' && before) {
        states.set(resource, { ...before, last: 'skipped', at });
        return;
      }
      states.set(resource, {
        last: outcome,
        at,
        failuresInARow: outcome === 'failed' ? (before?.failuresInARow ?? 0) + 1 : 0,
        lastSuccessAt: outcome === 'completed' ? at : (before?.lastSuccessAt ?? null),
        ...(error !== undefined && { error }),
      });
    },
    check() {
      const tried = [...states.entries()].filter(([, s]) => s.last !== 'skipped' || s.failuresInARow > 0);
      if (tried.length === 0) return true;
      const failing = tried.filter(([, s]) => s.failuresInARow > 0);
      if (failing.length < tried.length) return true;
      const [resource, state] = failing[0]!;
      return `no poller pass succeeds: the latest pass of every resource failed (${resource}: ${state.error ?? 'failed'})`;
    },
    details: () => Object.fromEntries(states),
  };
}
