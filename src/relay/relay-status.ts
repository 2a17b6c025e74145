/**
 * What the relay knows of its own progress, measured on its own schedule (never only when a pass
 * ends): the backlog, the oldest row's age, rows acknowledged per second over the last half
 * minute, the time left at that rate, and when Kafka last acknowledged a send. The HTTP side asks
 * `relayReadiness` whether the relay can publish; the console's overview and the progress log
 * show the rest.
 */
export interface RelayStatus {
  /** `publisher` holds the lock and publishes; `standby` waits for it (decision 001). */
  role: 'publisher' | 'standby' | 'stopped';
  /** Rows waiting to be published (parked rows apart), as last measured; null before the first measure. */
  backlog: number | null;
  /** Age of the oldest waiting row, seconds. */
  oldestAgeSeconds: number;
  /** Rows Kafka acknowledged per second, over the last RATE_WINDOW_MS. */
  ratePerSecond: number;
  /** backlog / rate; null when nothing moves. */
  etaSeconds: number | null;
  /** When Kafka last acknowledged a send of this relay (epoch ms), or null. */
  lastAckAt: number | null;
  /** Since when rows wait with no ack (epoch ms), or null when nothing waits or sends succeed. */
  waitingSince: number | null;
}

const RATE_WINDOW_MS = 30_000;

export interface RelayProgress {
  acked(rows: number, at?: number): void;
  measured(backlog: number, oldestAgeSeconds: number, at?: number): void;
  status(role: RelayStatus['role'], at?: number): RelayStatus;
}

export function createRelayProgress(): RelayProgress {
  /** Acks per whole second: [second, rows]. */
  const buckets: Array<[number, number]> = [];
  let backlog: number | null = null;
  let oldestAgeSeconds = 0;
  let lastAckAt: number | null = null;
  /** When rows were first seen waiting after an empty backlog. */
  let backlogSince: number | null = null;
  const startedAt = Date.now();

  function rate(at: number): number {
    const from = Math.floor((at - RATE_WINDOW_MS) / 1000);
    while (buckets.length > 0 && buckets[0]![0] < from) buckets.shift();
    const rows = buckets.reduce((n, [, c]) => n + c, 0);
    // A relay younger than the window: its rate over the time it has run.
    const span = Math.min(RATE_WINDOW_MS, Math.max(1000, at - startedAt)) / 1000;
    return rows / span;
  }

  return {
    acked(rows, at = Date.now()) {
      lastAckAt = at;
      const second = Math.floor(at / 1000);
      const last = buckets.at(-1);
      if (last && last[0] === second) last[1] += rows;
      else buckets.push([second, rows]);
    },
    measured(count, age, at = Date.now()) {
      backlog = count;
      oldestAgeSeconds = age;
      if (count === 0) backlogSince = null;
      else backlogSince ??= at;
    },
    status(role, at = Date.now()) {
      const r = rate(at);
      return {
        role,
        backlog,
        oldestAgeSeconds,
        ratePerSecond: Math.round(r),
        etaSeconds: backlog && r > 0 ? Math.ceil(backlog / r) : backlog === 0 ? 0 : null,
        lastAckAt,
        // Rows wait with no ack since the later of the last ack and their first sighting.
        waitingSince: backlog && backlogSince !== null ? Math.max(lastAckAt ?? 0, backlogSince) : null,
      };
    },
  };
}

/**
 * The relay's readiness: "cannot publish" when rows wait and no send has succeeded for
 * `stallSeconds` (RELAY_STALL_SECONDS). Judged on the measured backlog and the time of the last
 * ack, both monotonic through an outage, so the answer does not flap; a standby is ready (it
 * takes over within a sweep when the publisher goes).
 */
export function relayReadiness(status: RelayStatus, stallSeconds: number, at = Date.now()): true | string {
  if (status.role === 'stopped') return 'the relay is not running';
  if (status.role === 'standby') return true;
  if (status.waitingSince === null || !status.backlog) return true;
  const waited = (at - status.waitingSince) / 1000;
  return waited > stallSeconds
    ? `cannot publish: ${status.backlog} rows wait and no send has succeeded for ${Math.round(waited)} s (bound ${stallSeconds} s)`
    : true;
}
