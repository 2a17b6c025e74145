import type { Resource } from '../partner/resources.js';
import {
  lastProgressAt,
  noFirstPage,
  pageProgress,
  passStatus,
  passUnderWay,
  POLLER_STALE_SECONDS,
  type PassTimes,
} from './pass-staleness.js';

/** How a pass of a resource ended; `skipped`: another process (or pass) is polling it right now. */
export type PassOutcome = 'completed' | 'skipped' | 'failed';

/** What the poller's /readyz tells of its passes, per resource. */
export interface ResourcePassState {
  /** The outcome of the resource's latest pass (`skipped`: another process polls it now); null before one ends. */
  last: PassOutcome | null;
  at: string;
  /** Failed passes in a row (0 after a completed one). */
  failuresInARow: number;
  lastSuccessAt: string | null;
  error?: string;
  /** The pass this process has under way: "page 12 of 240", and when it last moved. */
  underWay?: { progress: string; lastProgressAt: string };
}

export interface PassHealth {
  record(summary: { resource: Resource; outcome: PassOutcome; error?: string }): void;
  /** A pass has started (`pages` 0) or read one more page (src/poller/resource-pass.ts). */
  progress(progress: { resource: Resource; pages: number; pageCount: number }): void;
  /**
   * `true` while some resource this process polls is not stalled by the rule of pass-staleness.ts
   * (the overview's and the alert's): a pass under way whose pages arrive is moving, however long
   * since the last success. The reason when every one is stalled: its passes fail, or its pass
   * under way has had no page for POLLER_STALE_SECONDS. Skipped passes are another process's work
   * and never count against this one.
   */
  check(): true | string;
  details(): Partial<Record<Resource, ResourcePassState>>;
}

interface Tracked {
  state: ResourcePassState;
  times: PassTimes;
  pages: number;
  pageCount: number;
}

/** `staleAfter`: each resource's stale limit in seconds (default POLLER_STALE_SECONDS). */
export function createPassHealth(
  staleAfter: (resource: Resource) => number = () => POLLER_STALE_SECONDS,
): PassHealth {
  const tracked = new Map<Resource, Tracked>();
  // Each event strictly after the one before: a pass that starts in the millisecond its
  // predecessor failed is still under way, and a failure recorded right after a success is later.
  let lastTick = 0;
  const tick = () => new Date((lastTick = Math.max(Date.now(), lastTick + 1)));
  const get = (resource: Resource): Tracked => {
    let t = tracked.get(resource);
    if (!t) {
      t = {
        state: { last: null, at: new Date().toISOString(), failuresInARow: 0, lastSuccessAt: null },
        times: {
          lastStartedAt: null,
          lastSucceededAt: null,
          lastFailedAt: null,
          lastPageAt: null,
          staleAfterSeconds: staleAfter(resource),
        },
        pages: 0,
        pageCount: 0,
      };
      tracked.set(resource, t);
    }
    return t;
  };
  // Not counted: resources only ever skipped, or skipped since their last success.
  const tried = (t: Tracked) =>
    t.times.lastStartedAt != null &&
    (t.state.last !== 'skipped' || t.state.failuresInARow > 0 || passUnderWay(t.times));
  const why = (resource: Resource, t: Tracked, now: number): string => {
    const progress = lastProgressAt(t.times);
    if (progress)
      return `pass under way at ${pageProgress(resource, t.pages, t.pageCount)}, no page for ${Math.round((now - progress.getTime()) / 1000)} s`;
    if (noFirstPage(t.times, now))
      return `pass under way, no page since it started over ${POLLER_STALE_SECONDS} s ago`;
    if (t.state.failuresInARow) return t.state.error ?? 'failed';
    return `last success over ${t.times.staleAfterSeconds ?? POLLER_STALE_SECONDS} s ago`;
  };
  return {
    record({ resource, outcome, error }) {
      const t = get(resource);
      const before = t.state;
      const now = tick();
      const at = now.toISOString();
      if (outcome === 'skipped') {
        t.state = { ...before, last: 'skipped', at };
        return;
      }
      if (outcome === 'completed') t.times.lastSucceededAt = now;
      else t.times.lastFailedAt = now;
      // A failure before any pass started (the lock was unavailable) is a pass tried too.
      t.times.lastStartedAt ??= now;
      t.state = {
        last: outcome,
        at,
        failuresInARow: outcome === 'failed' ? before.failuresInARow + 1 : 0,
        lastSuccessAt: outcome === 'completed' ? at : before.lastSuccessAt,
        ...(error !== undefined && { error }),
      };
    },
    progress({ resource, pages, pageCount }) {
      const t = get(resource);
      const now = tick();
      if (pages === 0) t.times.lastStartedAt = now;
      else t.times.lastPageAt = now;
      t.pages = pages;
      t.pageCount = pageCount;
    },
    check() {
      const now = Date.now();
      const judged = [...tracked.entries()].filter(([, t]) => tried(t));
      if (judged.length === 0) return true;
      const stalled = judged.filter(([, t]) => passStatus(t.times, now) === 'stalled');
      if (stalled.length < judged.length) return true;
      const [resource, t] = stalled[0]!;
      return `no poller pass succeeds or moves: every resource it polls is stalled (${resource}: ${why(resource, t, now)})`;
    },
    details() {
      const out: Partial<Record<Resource, ResourcePassState>> = {};
      for (const [resource, t] of tracked) {
        const progress = lastProgressAt(t.times);
        out[resource] = progress
          ? {
              ...t.state,
              underWay: {
                progress: pageProgress(resource, t.pages, t.pageCount),
                lastProgressAt: progress.toISOString(),
              },
            }
          : t.state;
      }
      return out;
    },
  };
}
