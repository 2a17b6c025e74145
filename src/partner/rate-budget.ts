import { randomUUID } from 'node:crypto';
import type { Db } from '../db/prisma.js';
import { type Logger, logSummary } from '../logger.js';
import { exposeMetrics, metrics, startAtZero } from '../metrics.js';
import { budgetSource } from './partner-client.js';
import { LANES, LANE_RANK, type Lane, type RateBudget } from './rate-budget-types.js';
import { exposeBudgetSources, NO_SOURCE, type SourceShares, weightOf } from './rate-budget-sources.js';
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
 * - pacing: the poll lane takes at most its share of `paceMs` (the limit spread evenly over the
 *   window) in any `paceMs`, so its slots age out of the window evenly too and one frees every
 *   ~window/limit: a burst of writes beyond the reserve waits a fraction of a second for the next
 *   freed slot instead of the end of a poller's burst (decision 015). The writes and read-backs
 *   together go at a cell rate: up to a fifth of the limit at once after a quiet stretch (a
 *   backlog left by a Kafka outage, issue 53), the rest spread so that no window holds more than
 *   the limit: a source whose first command comes while another's burst runs waits for the next
 *   paced slot, not for the window to slide (issue 52; decision 060);
 * - shares by source (issue 52, decision 055): every slot and waiter carries the PMS source the
 *   call is made for (src/partner/partner-client.ts); among the waiters of one lane, the next
 *   free slots go to the sources furthest below their weighted share of the window's writes and
 *   read-backs (`PMS_WEIGHTS`): round-robin by source while several wait;
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
  /**
   * The poll lane takes at most limit × paceMs / window slots in any paceMs (the writes and
   * read-backs go at their cell rate, decision 060). Default 1000 ms; 0 turns all pacing off.
   */
  paceMs?: number;
  /** Added to the one-minute window. Default 1000 ms. */
  safetyMs?: number;
  /** The API's window. Default 60 000 ms (spec 8); tests shorten it. */
  windowMs?: number;
  /**
   * Weights by source, and the sources shown on /metrics per source (the deployment's budget
   * only: the customer tokens' budget leaves it unset).
   */
  shares?: SourceShares;
}

type Take =
  | { taken: true; used: number }
  | { taken: false; waitMs: number; reason: 'paused' | 'full' | 'paced' | 'error' };

const WAITER_TTL_SECONDS = 5;
const MAX_SLEEP_MS = 1000;
/** After a failed attempt to take a slot (database busy, connection lost): 50 ms doubling to 1 s. */
const ERROR_RETRY_MS = 50;
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
  if (options.shares) {
    startAtZero(metrics.budgetSourceRequests, {
      source: options.shares.sources ?? [],
      lane: ['write', 'readback'],
    });
  }
  const name = options.name ?? 'partner-api';
  const windowMs = (options.windowMs ?? 60_000) + (options.safetyMs ?? 1000);
  const windowSeconds = windowMs / 1000;
  const reserveFloor = Math.max(1, Math.ceil((limit * (options.pollReservePercent ?? 2)) / 100));
  const horizonMs = options.reserveHorizonMs ?? 10_000;
  const paceMs = options.paceMs ?? 1000;
  const paceSeconds = paceMs / 1000;
  // The poll lane's pace: the limit spread evenly over the window, per pace interval; never below one slot.
  const paceCap = Math.max(1, Math.ceil((limit * paceMs) / windowMs));
  const lockKey = `rate_budget:${name}`;
  const log = options.logger.child({ component: 'rate-budget', budget: name, limitPerMinute: limit });
  const shares = options.shares ?? {};
  if (options.shares)
    exposeBudgetSources({ db, budget: name, windowSeconds, sources: shares.sources ?? [], logger: log });
  const waits = logSummary(log, 'rate budget slots taken after waiting more than 1 s (count by lane)');
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

  interface TakeRow {
    taken: boolean;
    reason: 'taken' | 'paused' | 'full' | 'paced';
    wait_ms: number;
    used: number;
    write_n: number;
    readback_n: number;
    poll_n: number;
    external_n: number;
  }

  // One statement, run on its own (no interactive transaction): the function takes the budget's
  // advisory lock, applies the rules and returns; the lock ends with the statement, so it is held
  // for the function's own work, never across a round trip (migration 20261127200000, issue 43).
  async function tryTake(lane: Lane, waiterId: string, source: string | undefined): Promise<Take> {
    // The poll lane takes no share: it keeps its own reserve and pace.
    const slotSource = lane === 'poll' ? null : (source ?? null);
    const [row] = await db.$queryRaw<TakeRow[]>`
      SELECT * FROM rate_budget_try_take(
        ${name}, ${lane}, ${LANE_RANK[lane]}::int, ${waiterId}, ${limit}::int, ${windowSeconds}::float8,
        ${reserveFloor}::int, ${horizonMs}::float8, ${paceSeconds}::float8, ${paceCap}::int,
        ${WAITER_TTL_SECONDS}::float8, ${slotSource}::text, ${weightOf(shares, source)}::float8)`;
    if (!row) throw new Error('rate_budget_try_take returned no row');
    if (row.reason !== 'paused') {
      setGauges(
        new Map([
          ['write', row.write_n],
          ['readback', row.readback_n],
          ['poll', row.poll_n],
          ['external', row.external_n],
        ]),
      );
    }
    if (row.taken) return { taken: true, used: row.used };
    return { taken: false, waitMs: Number(row.wait_ms), reason: row.reason as 'paused' | 'full' | 'paced' };
  }

  /**
   * What the API last reported, not yet stored, and the one store running. Learning is off the
   * calls' path (the transport does not wait for it) and one at a time per process: an answer's
   * count is newer than the ones before it, so those still waiting are dropped (issue 53: awaited
   * per answer, it took 88 ms at the median of each call and held the budget's lock meanwhile).
   */
  let latest: { remaining: number; resetAt: Date } | null = null;
  let learning: Promise<void> | null = null;

  async function learnNow(remaining: number, resetAt: Date): Promise<void> {
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
  }

  return {
    capacity,
    reserve,

    async acquire(lane, signal, forSource) {
      const source = forSource ?? budgetSource();
      const started = performance.now();
      const waiterId = randomUUID();
      let waited = false;
      let failures = 0;
      try {
        for (;;) {
          signal?.throwIfAborted();
          let take: Take;
          try {
            take = await tryTake(lane, waiterId, source);
            failures = 0;
          } catch (error) {
            // Taking a slot never fails the caller's work: the attempt is retried (issue 43).
            signal?.throwIfAborted();
            failures++;
            log.warn(
              { err: error, lane, attempt: failures },
              'rate budget could not take a slot; trying again',
            );
            take = {
              taken: false,
              waitMs: Math.min(MAX_SLEEP_MS, ERROR_RETRY_MS * 2 ** (failures - 1)),
              reason: 'error',
            };
          }
          if (take.taken) {
            const seconds = (performance.now() - started) / 1000;
            metrics.budgetWaitSeconds.observe({ lane }, seconds);
            if (lane !== 'poll' && options.shares)
              metrics.budgetSourceRequests.inc({ source: source ?? NO_SOURCE, lane });
            // Every slot, for `npm run bench -- budget` (LOG_LEVEL=trace): exact wait percentiles per lane.
            log.trace(
              { lane, waitedMs: Math.round(seconds * 1000), used: take.used },
              'rate budget slot taken',
            );
            if (seconds > 1) {
              const waitedMs = Math.round(seconds * 1000);
              // Once per slot at debug; at info, one line a minute (issue 41: it scrolled the banner away).
              log.debug({ lane, waitedMs, used: take.used }, 'rate budget slot taken after waiting');
              waits.add(lane, { longestWaitMs: waitedMs });
            }
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

    learn(remaining, resetAt, reportedLimit) {
      // A smaller limit's count is another scope's (RateBudget.learn); a larger one may be the
      // API's own where this budget was set below it (the runbook's answer to 429s).
      if (reportedLimit !== undefined && reportedLimit < limit) return Promise.resolve();
      latest = { remaining, resetAt };
      learning ??= (async () => {
        try {
          while (latest) {
            const next: { remaining: number; resetAt: Date } = latest;
            latest = null;
            await learnNow(next.remaining, next.resetAt).catch((error: unknown) =>
              log.warn(
                { err: error },
                'rate budget could not learn what the API reports (the next answer tries again)',
              ),
            );
          }
        } finally {
          learning = null;
        }
      })();
      return learning;
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
