/**
 * When the overview marks a stage as not moving. One place for the thresholds, so the console,
 * the runbook (docs/runbook.md) and the alert rules can say the same thing.
 *
 * - relay `stalled`: the oldest unpublished outbox row is older than RELAY_STALL_SECONDS (rows
 *   wait: Kafka unreachable or no relay running). The bound is the configured one, passed in: the
 *   same rule as the relay's /readyz and `rentbridge_relay_stalled`, which the alert reads.
 * - consumers `stalled`: a command has sat `pending`/`in_flight` unchanged for COMMAND_STUCK_SECONDS.
 * - poller `stalled`: a resource's last successful pass is older than POLLER_STALE_SECONDS, or its
 *   last pass failed.
 * - partner API `attention`: 429s received, or the budget paused by a Retry-After.
 * - dead letters `attention`: open letters wait for an operator.
 * - relay, consumers, poller, dead letters `stopped` ("not running"): no process running the role
 *   has reported for ROLE_GONE_SECONDS (src/ops/role-heartbeat.ts); consumers `attention` when
 *   some of the four command consumers run and others do not.
 */
/** RELAY_STALL_SECONDS's default (src/config/config.ts), for callers given no configuration. */
export const DEFAULT_RELAY_STALL_SECONDS = 120;
export const COMMAND_STUCK_SECONDS = 300;
/** Three passes of the default POLL_INTERVAL_SECONDS (300). */
export const POLLER_STALE_SECONDS = 900;

/** `stopped`: no process running the stage's role has reported for ROLE_GONE_SECONDS ("not running"). */
export type StageStatus = 'moving' | 'idle' | 'attention' | 'stalled' | 'stopped';

export function ageSeconds(at: Date | null, now: number): number | null {
  return at ? Math.max(0, Math.round((now - at.getTime()) / 1000)) : null;
}

export function relayStatus(
  backlog: number,
  oldestAgeSeconds: number | null,
  publishedLastHour: number,
  stallSeconds: number,
): StageStatus {
  if (backlog > 0 && (oldestAgeSeconds ?? 0) > stallSeconds) return 'stalled';
  return backlog > 0 || publishedLastHour > 0 ? 'moving' : 'idle';
}

export function pollerStatus(
  cursor: { lastSucceededAt: Date | null; lastFailedAt: Date | null },
  now: number,
): StageStatus {
  const success = cursor.lastSucceededAt?.getTime() ?? 0;
  if (cursor.lastFailedAt && cursor.lastFailedAt.getTime() > success) return 'stalled';
  if (!cursor.lastSucceededAt) return 'idle';
  return now - success > POLLER_STALE_SECONDS * 1000 ? 'stalled' : 'moving';
}
