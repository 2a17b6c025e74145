import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics.js';
import { backlog } from '../outbox/outbox-reader.js';
import type { RelayProgress, RelayStatus } from './relay-status.js';

/**
 * The relay's backlog, lag and stall gauges, measured on their own schedule (every second,
 * whatever the streams are doing), and the progress log while rows wait. The oldest waiting row
 * and the parked rows are cheap (index probes) and read every time; the count of the backlog is
 * an index-only scan of every waiting row: above SMALL_BACKLOG rows it takes at most 1/COUNT_SHARE
 * of the time (a 60 ms count at 100,000 rows: every 3 s), so that measuring never slows the drain.
 */
const COUNT_SHARE = 50;
const SMALL_BACKLOG = 10_000;

export interface RelayGaugesOptions {
  db: Db;
  logger: Logger;
  progress: RelayProgress;
  stallSeconds: number;
  progressEveryMs: number;
  isLeader: () => boolean;
  status: () => RelayStatus;
}

export function createRelayGauges(options: RelayGaugesOptions): { measure(): Promise<void> } {
  const { db, logger, progress, stallSeconds, progressEveryMs } = options;
  let measuring = false;
  let lastProgressLog = 0;
  let catchingUp = false;
  let count = 0;
  let countDueAt = 0;

  async function measure(): Promise<void> {
    if (measuring) return;
    measuring = true;
    try {
      const started = Date.now();
      // A small backlog is counted every time (cheap, and a backlog that just began is never read as 0).
      const due = count < SMALL_BACKLOG || started >= countDueAt;
      const b = await backlog(db, { count: due });
      const now = Date.now();
      if (b.count !== null) {
        count = b.count;
        countDueAt = now + (now - started) * COUNT_SHARE;
      }
      // Nothing waits: no count needed to know it is zero.
      if (!b.oldest) count = 0;
      const lag = b.oldest ? Math.max(0, (now - b.oldest.getTime()) / 1000) : 0;
      progress.measured(count, lag, now);
      metrics.outboxBacklog.set(count);
      metrics.outboxParked.set(b.parked);
      metrics.relayLagSeconds.set(lag);
      // The same rule as /readyz's relay check (src/app/readiness.ts), so that two writers of the
      // gauge in one process (`start`) agree; the relay's own readiness is the ack-based one.
      metrics.relayStalled.set(lag > stallSeconds ? 1 : 0);
      if (options.isLeader()) logProgress(count, lag, now);
    } catch (error) {
      logger.warn({ err: error }, 'relay gauges not measured');
    } finally {
      measuring = false;
    }
  }

  function logProgress(waiting: number, lag: number, now: number): void {
    if (waiting > 0 && now - lastProgressLog >= progressEveryMs) {
      lastProgressLog = now;
      catchingUp = true;
      const s = options.status();
      logger.info(
        {
          backlog: s.backlog,
          ratePerSecond: s.ratePerSecond,
          etaSeconds: s.etaSeconds,
          oldestAgeSeconds: Math.round(lag),
        },
        'relay progress: rows waiting',
      );
    } else if (waiting === 0 && catchingUp) {
      catchingUp = false;
      lastProgressLog = 0;
      logger.info({ ratePerSecond: options.status().ratePerSecond }, 'relay caught up');
    }
  }

  return { measure };
}
