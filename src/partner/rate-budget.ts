import { randomUUID } from 'node:crypto';
import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import { exposeMetrics, metrics, startAtZero } from '../metrics.js';
import { LANES, LANE_RANK, type Lane, type RateBudget } from './rate-budget-types.js';
import { sleep } from './transport.js';

/**
 * The Partner API budget shared by every process on one egress IP (spec 8: a rolling one-minute
 * window per source IP), coordinated through PostgreSQL:
 *
 * - a slot is a row in rate_budget_slots; a process takes one under a transaction-scoped
 *   advisory lock (one per budget name) when fewer than the limit were taken in the window,
 *   and prunes older rows as it goes;
 * - lanes: a waiting write or read-back writes a row in rate_budget_waiters, refreshed while it
 *   waits; a lower lane counts those rows as taken, so the next free slot goes to the higher
 *   lane;
 * - the reserve: the poll lane leaves free a share of the window sized from the higher lanes'
 *   demand over the last window (`reserveHorizonMs` of it at that rate), at least
 *   `pollReservePercent` of the limit and at most a tenth of what the higher lanes leave, so a
 *   write or read-back that arrives while the poller saturates the window finds a free slot;
 * - pacing: the poll lane takes at most its share of `pollPaceMs` (the limit spread evenly over
 *   the window) in any `pollPaceMs`, so its slots age out of the window evenly too and one frees
 *   every ~window/limit. A burst of writes beyond the reserve then waits a fraction of a second
 *   for the next freed slot instead of the end of a poller's burst (decision 015);
 * - a 429 writes `paused_until` into rate_budget_state: no process takes a slot before it;
 * - when the API reports `X-RateLimit-Remaining`, requests it counted beyond ours (another system
 *   on the same IP) are added as `external` slots, which age out of the window like ours.
 *
 * Time is PostgreSQL's `clock_timestamp()`, one clock for every process. The window is one minute
 * plus `safetyMs`: a slot is taken just before the request leaves, and the API counts it when it
 * arrives, a little later; without the margin a slot could free up while the API still counts it.
 */
export interface RateBudgetOptions {
  db: Db;
  /** Requests per rolling minute for all processes together (PARTNER_RATE_LIMIT_PER_MINUTE). */
  limitPerMinute: number;
  logger: Logger;
  /** Budget name, one per egress IP / API. Default `partner-api`. */
  name?: string;
  /** Smallest share of the window the poll lane leaves free for writes and read-backs. Default 2 (%), at least 1 slot. */
  pollReservePercent?: number;
  /**
   * The reserve covers this much of the higher lanes' demand at the rate of the last window
   * (write and read-back slots in it), above the floor. Default 10 000 ms.
   */
  reserveHorizonMs?: number;
  /** The poll lane takes at most limit × pollPaceMs / window slots in any pollPaceMs. Default 1000 ms; 0 turns pacing off. */
  pollPaceMs?: number;
  /** Added to the one-minute window. Default 1000 ms. */
  safetyMs?: number;
  /** The API's window. Default 60 000 ms (spec 8); tests shorten it. */
  windowMs?: number;
}

type Take =
  { taken: true; used: number } | { taken: false; waitMs: number; reason: 'paused' | 'full' | 'paced' };

const WAITER_TTL_SECONDS = 5;
const MAX_SLEEP_MS = 1000;
const STATE_LOG_EVERY_MS = 30_000;

export function createRateBudget(options: RateBudgetOptions): RateBudget & {
  /** Slots the lane may use of a full window while the higher lanes used `demand` of it. */
  capacity(lane: Lane, demand?: number): number;
  /** Slots the poll lane leaves free while the higher lanes used `demand` of the window. */
  reserve(demand: number): number;
} {
  const { db, limitPerMinute: limit } = options;
  exposeMetrics('partner');
  startAtZero(metrics.budgetWaitSeconds, { lane: LANES });
  const name = options.name ?? 'partner-api';
  const windowMs = (options.windowMs ?? 60_000) + (options.safetyMs ?? 1000);
  const windowSeconds = windowMs / 1000;
  const reserveFloor = Math.max(1, Math.ceil((limit * (options.pollReservePercent ?? 2)) / 100));
  const horizonMs = options.reserveHorizonMs ?? 10_000;
  const paceMs = options.pollPaceMs ?? 1000;
  const paceSeconds = paceMs / 1000;
  // The limit spread evenly over the window, per pace interval: never below one slot.
  const paceCap = Math.max(1, Math.ceil((limit * paceMs) / windowMs));
  const lockKey = `rate_budget:${name}`;
  const log = options.logger.child({ component: 'rate-budget', budget: name, limitPerMinute: limit });
  let lastStateLog = 0;

  // The higher lanes' last-window demand, scaled to the horizon; never under the floor, and never
  // more than a tenth of what they leave, so the poller keeps >= 90% of it.
  const reserve = (demand: number) =>
    Math.max(
      reserveFloor,
      Math.min(Math.ceil((demand * horizonMs) / windowMs), Math.floor((limit - demand) / 10)),
    );
  const capacity = (lane: Lane, demand = 0) =>
    lane === 'poll' ? Math.max(0, limit - reserve(demand)) : limit;
  const demandOf = (byLane: Map<string, number>) =>
    (byLane.get('write') ?? 0) + (byLane.get('readback') ?? 0);

  function setGauges(byLane: Map<string, number>): void {
    const used = [...byLane.values()].reduce((a, b) => a + b, 0);
    const demand = demandOf(byLane);
    for (const lane of LANES) {
      metrics.budgetUsed.set({ lane }, byLane.get(lane) ?? 0);
      metrics.budgetLeft.set({ lane }, Math.max(0, capacity(lane, demand) - used));
    }
    metrics.budgetUsed.set({ lane: 'external' }, byLane.get('external') ?? 0);
  }

  async function tryTake(lane: Lane, waiterId: string): Promise<Take> {
    const rank = LANE_RANK[lane];
    return db.$transaction(async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${lockKey}))`;
      const [clock] = await tx.$queryRaw<{ now: Date; paused_until: Date | null }[]>`
        SELECT clock_timestamp() AS now,
               (SELECT paused_until FROM rate_budget_state WHERE budget = ${name}) AS paused_until`;
      const now = clock!.now.getTime();
      const announce = async () => {
        if (lane === 'poll') return;
        await tx.$executeRaw`
          INSERT INTO rate_budget_waiters (id, budget, lane, rank, expires_at)
          VALUES (${waiterId}, ${name}, ${lane}, ${rank},
                  clock_timestamp() + make_interval(secs => ${WAITER_TTL_SECONDS}::float8))
          ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at`;
      };
      if (clock!.paused_until && clock!.paused_until.getTime() > now) {
        await announce();
        return { taken: false, waitMs: clock!.paused_until.getTime() - now, reason: 'paused' } as const;
      }
      await tx.$executeRaw`
        DELETE FROM rate_budget_slots
        WHERE budget = ${name} AND taken_at <= clock_timestamp() - make_interval(secs => ${windowSeconds}::float8)`;
      await tx.$executeRaw`DELETE FROM rate_budget_waiters WHERE budget = ${name} AND expires_at < clock_timestamp()`;
      const rows = await tx.$queryRaw<{ lane: string; n: number; oldest: Date }[]>`
        SELECT lane, count(*)::int AS n, min(taken_at) AS oldest
        FROM rate_budget_slots WHERE budget = ${name} GROUP BY lane`;
      const [ahead] = await tx.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM rate_budget_waiters
        WHERE budget = ${name} AND rank < ${rank} AND id <> ${waiterId}`;
      const byLane = new Map(rows.map((r) => [r.lane, r.n]));
      const used = rows.reduce((a, r) => a + r.n, 0);
      const allowed = capacity(lane, demandOf(byLane)) - (ahead?.n ?? 0);
      if (used < allowed && lane === 'poll' && paceMs > 0) {
        const [paced] = await tx.$queryRaw<{ n: number; oldest: Date | null }[]>`
          SELECT count(*)::int AS n, min(taken_at) AS oldest FROM rate_budget_slots
          WHERE budget = ${name} AND lane = 'poll'
            AND taken_at > clock_timestamp() - make_interval(secs => ${paceSeconds}::float8)`;
        if (paced && paced.n >= paceCap && paced.oldest) {
          setGauges(byLane);
          return { taken: false, waitMs: paced.oldest.getTime() + paceMs - now, reason: 'paced' } as const;
        }
      }
      if (used < allowed) {
        await tx.$executeRaw`INSERT INTO rate_budget_slots (budget, lane, taken_at) VALUES (${name}, ${lane}, clock_timestamp())`;
        await tx.$executeRaw`DELETE FROM rate_budget_waiters WHERE id = ${waiterId}`;
        byLane.set(lane, (byLane.get(lane) ?? 0) + 1);
        setGauges(byLane);
        return { taken: true, used: used + 1 } as const;
      }
      await announce();
      setGauges(byLane);
      const oldest = Math.min(...rows.map((r) => r.oldest.getTime()));
      const waitMs = Number.isFinite(oldest) ? oldest + windowMs - now : 50;
      return { taken: false, waitMs, reason: 'full' } as const;
    });
  }

  return {
    capacity,
    reserve,

    async acquire(lane, signal) {
      const started = performance.now();
      const waiterId = randomUUID();
      let waited = false;
      try {
        for (;;) {
          signal?.throwIfAborted();
          const take = await tryTake(lane, waiterId);
          if (take.taken) {
            const seconds = (performance.now() - started) / 1000;
            metrics.budgetWaitSeconds.observe({ lane }, seconds);
            // Every slot, for `npm run bench -- budget` (LOG_LEVEL=trace): exact wait percentiles per lane.
            log.trace(
              { lane, waitedMs: Math.round(seconds * 1000), used: take.used },
              'rate budget slot taken',
            );
            if (seconds > 1)
              log.info(
                { lane, waitedMs: Math.round(seconds * 1000), used: take.used },
                'rate budget slot taken after waiting',
              );
            if (Date.now() - lastStateLog > STATE_LOG_EVERY_MS) {
              lastStateLog = Date.now();
              log.info({ used: take.used, left: Math.max(0, limit - take.used) }, 'rate budget state');
            }
            return;
          }
          if (!waited)
            log.debug(
              { lane, reason: take.reason, waitMs: Math.round(take.waitMs) },
              'rate budget waiting for a slot',
            );
          waited = true;
          // Several processes wake for the same freed slot: a little jitter spreads them out.
          await sleep(Math.min(MAX_SLEEP_MS, Math.max(5, take.waitMs)) + Math.random() * 10, signal);
        }
      } finally {
        if (waited && lane !== 'poll') {
          await db.$executeRaw`DELETE FROM rate_budget_waiters WHERE id = ${waiterId}`.catch(
            (error: unknown) =>
              log.warn({ err: error }, 'rate budget could not withdraw a waiter (it expires by itself)'),
          );
        }
      }
    },

    async pauseUntil(until) {
      await db.$executeRaw`
        INSERT INTO rate_budget_state (budget, paused_until, updated_at) VALUES (${name}, ${until}, clock_timestamp())
        ON CONFLICT (budget) DO UPDATE
        SET paused_until = GREATEST(rate_budget_state.paused_until, EXCLUDED.paused_until), updated_at = clock_timestamp()`;
      // Logged (and counted) once, by the one handler of a 429 (src/partner/throttle.ts).
      log.debug({ pausedUntil: until.toISOString() }, 'rate budget paused after a 429');
    },

    async learn(remaining, resetAt) {
      const added = await db.$transaction(async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${lockKey}))`;
        const [row] = await tx.$queryRaw<{ n: number }[]>`
          SELECT count(*)::int AS n FROM rate_budget_slots
          WHERE budget = ${name} AND taken_at > clock_timestamp() - make_interval(secs => ${windowSeconds}::float8)`;
        // Our own requests in flight are counted by us but not yet by the API, and our window is
        // longer than the API's: both make `external` smaller, never larger, than the truth.
        const external = limit - remaining - (row?.n ?? 0);
        if (external > 0) {
          await tx.$executeRaw`
            INSERT INTO rate_budget_slots (budget, lane, taken_at)
            SELECT ${name}, 'external', clock_timestamp() FROM generate_series(1, ${external}::int)`;
        }
        await tx.$executeRaw`
          INSERT INTO rate_budget_state (budget, remaining, remaining_at, updated_at)
          VALUES (${name}, ${remaining}::int, clock_timestamp(), clock_timestamp())
          ON CONFLICT (budget) DO UPDATE
          SET remaining = EXCLUDED.remaining, remaining_at = EXCLUDED.remaining_at, updated_at = EXCLUDED.updated_at`;
        return Math.max(0, external);
      });
      if (added > 0) {
        log.info(
          { remaining, resetAt: resetAt.toISOString(), external: added },
          'rate budget learned of requests made by another system',
        );
      }
    },

    async snapshot() {
      const [row] = await db.$queryRaw<{ used: number; paused_until: Date | null }[]>`
        SELECT (SELECT count(*)::int FROM rate_budget_slots
                WHERE budget = ${name} AND taken_at > clock_timestamp() - make_interval(secs => ${windowSeconds}::float8)) AS used,
               (SELECT paused_until FROM rate_budget_state WHERE budget = ${name} AND paused_until > clock_timestamp()) AS paused_until`;
      const used = row?.used ?? 0;
      return { used, left: Math.max(0, limit - used), pausedUntil: row?.paused_until ?? null };
    },
  };
}
