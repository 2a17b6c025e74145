/**
 * When the overview marks a stage as not moving. One place for the thresholds, so the console,
 * the runbook (docs/runbook.md) and the alert rules can say the same thing.
 *
 * - relay `stalled`: the oldest unpublished outbox row is older than RELAY_STALL_SECONDS (rows
 *   wait: Kafka unreachable or no relay running). The bound is the configured one, passed in: the
 *   same rule as the relay's /readyz and `rentbridge_relay_stalled`, which the alert reads.
 * - consumers `stalled`: a command has sat `pending`/`in_flight` unchanged for COMMAND_STUCK_SECONDS.
 * - poller `stalled`: by the poller's own rule (passStatus in src/poller/pass-staleness.ts, also its /readyz and
 *   `RentbridgePollerStale`): a pass under way whose pages stopped arriving for POLLER_STALE_SECONDS;
 *   with none under way, a last pass that failed or a last success older than that. A pass under
 *   way whose pages arrive is `moving`, with its progress ("page N of M").
 * - partner API `attention`: 429s received, or the budget paused by a Retry-After.
 * - dead letters `attention`: open letters wait for an operator.
 * - relay, consumers, poller, dead letters `stopped` ("not running"): no process running the role
 *   has reported for ROLE_GONE_SECONDS (src/ops/role-heartbeat.ts); consumers `attention` when
 *   some of the four command consumers run and others do not.
 */
/** RELAY_STALL_SECONDS's default (src/config/config.ts), for callers given no configuration. */
export const DEFAULT_RELAY_STALL_SECONDS = 120;
export const COMMAND_STUCK_SECONDS = 300;

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
