/**
 * When the poller's work on a resource is stalled: one rule for the overview (from poller_cursors,
 * src/ops/overview/stage-rules.ts), the poller's /readyz (its own passes, pass-health.ts) and, in
 * PromQL, the `RentbridgePollerStale` alert (the last success, unless the pass under way showed
 * progress: `rentbridge_poller_pass_progress_timestamp_seconds`).
 *
 * - A pass under way (started after its resource's last success and last failure) that has read a
 *   page is judged by its own progress: `moving` while its latest page is at most
 *   POLLER_STALE_SECONDS old, `stalled` once its pages stop arriving for longer. A first pass of
 *   hundreds of pages is moving for as long as it reads them, however long ago the last success was.
 * - Before its first page a pass has shown nothing yet (a retry of a failing pass has only begun):
 *   `stalled` once it has gone POLLER_STALE_SECONDS without one, else judged as if not under way.
 * - Otherwise by the last pass that ended: `stalled` when it failed, or when the last success is
 *   older than the resource's stale limit (`staleAfterSeconds`: three of its intervals, at least
 *   POLLER_STALE_SECONDS; customer issues, polled every 30 min, are not late after 15); `idle`
 *   before any pass.
 */

/** Three passes of the default POLL_INTERVAL_SECONDS (300); the least a resource's stale limit is. */
export const POLLER_STALE_SECONDS = 900;

/**
 * When a resource's last success is too old: three of its poll intervals missed, and never less
 * than POLLER_STALE_SECONDS. The poller records it with each pass (poller_cursors.stale_after_seconds,
 * `rentbridge_poller_stale_after_seconds`), so the overview and the alert judge by the poller's own
 * intervals, whatever the configuration of the process that reads them.
 */
export function staleAfterSeconds(intervalSeconds: number): number {
  return Math.max(POLLER_STALE_SECONDS, 3 * intervalSeconds);
}

export interface PassTimes {
  lastStartedAt: Date | null;
  lastSucceededAt: Date | null;
  lastFailedAt: Date | null;
  /** The latest page of the pass under way (a page of an earlier pass counts for nothing). */
  lastPageAt: Date | null;
  /** The resource's stale limit (`staleAfterSeconds`); POLLER_STALE_SECONDS when not known. */
  staleAfterSeconds?: number | null;
}

export type PassStatus = 'moving' | 'idle' | 'stalled';

const ms = (at: Date | null): number => at?.getTime() ?? 0;

/** A pass has started and has neither succeeded nor failed since. */
export function passUnderWay(t: PassTimes): boolean {
  return t.lastStartedAt != null && ms(t.lastStartedAt) > Math.max(ms(t.lastSucceededAt), ms(t.lastFailedAt));
}

/** The latest page of the pass under way; null when none is under way or it has read no page yet. */
export function lastProgressAt(t: PassTimes): Date | null {
  return passUnderWay(t) && ms(t.lastPageAt) > ms(t.lastStartedAt) ? t.lastPageAt : null;
}

/** A pass under way that has gone POLLER_STALE_SECONDS since its start without a page. */
export function noFirstPage(t: PassTimes, now: number): boolean {
  return passUnderWay(t) && !lastProgressAt(t) && now - ms(t.lastStartedAt) > POLLER_STALE_SECONDS * 1000;
}

export function passStatus(t: PassTimes, now: number): PassStatus {
  const limit = POLLER_STALE_SECONDS * 1000;
  const progress = lastProgressAt(t);
  if (progress) return now - progress.getTime() > limit ? 'stalled' : 'moving';
  if (noFirstPage(t, now)) return 'stalled';
  if (t.lastFailedAt && ms(t.lastFailedAt) > ms(t.lastSucceededAt)) return 'stalled';
  if (!t.lastSucceededAt) return 'idle';
  const staleAfter = (t.staleAfterSeconds ?? POLLER_STALE_SECONDS) * 1000;
  return now - ms(t.lastSucceededAt) > staleAfter ? 'stalled' : 'moving';
}

/**
 * "page 12 of 240" (or "page 12" while the total is unknown), as the overview shows a pass under
 * way; "customer 12 of 807" for customer issues, read with a request per known customer.
 */
export function pageProgress(resource: string, pages: number, pageCount: number | null): string {
  const unit = resource === 'customer_issues' ? 'customer' : 'page';
  return `${unit} ${pages}${pageCount ? ` of ${pageCount}` : ''}`;
}
