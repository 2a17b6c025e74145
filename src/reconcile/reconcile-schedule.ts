import type { Logger } from '../logger.js';
import { createResourceLock } from '../poller/resource-lock.js';
import type { PassResult } from './reconcile-pass.js';
import type { ReconcileRepository } from './reconcile-repository.js';
import type { ReconcileScope } from './reconcile-types.js';

/**
 * The scheduled pass (RECONCILE_INTERVAL): run by the poller role, since it is poll-lane work.
 * One at a time across processes: a process takes the advisory lock the poller's resources use
 * (under a name no resource has), then runs a pass only if no scheduled run started within the
 * interval; the window goes on from where the last scheduled run ended, so passes neither overlap
 * nor leave gaps. Checked every minute (or every interval, when shorter).
 */

const LOCK = 'reconciliation';

/** What the schedule needs of the reconciler (src/reconcile/reconciler.ts). */
export interface ScheduledReconciler {
  run(scope: ReconcileScope, trigger: string): Promise<PassResult>;
  readonly repository: ReconcileRepository;
}

export interface ScheduleOptions {
  reconciler: ScheduledReconciler;
  databaseUrl: string;
  logger: Logger;
  intervalSeconds: number;
}

/** A role's component (src/app/lifecycle.ts's shape). */
export interface ScheduleComponent {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createReconcileSchedule(options: ScheduleOptions): ScheduleComponent {
  const { reconciler, logger, intervalSeconds } = options;
  const log = logger.child({ component: 'reconcile-schedule' });
  const lock = createResourceLock(options.databaseUrl, log);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const intervalMs = intervalSeconds * 1000;

  async function tick(): Promise<void> {
    if (!(await lock.tryAcquire(LOCK))) return;
    try {
      const [last] = (await reconciler.repository.runs(20)).filter(
        (r) => r.trigger === 'schedule' && r.state !== 'failed',
      );
      const now = Date.now();
      if (last && now - last.startedAt.getTime() < intervalMs) return;
      const since = last ? last.until : new Date(now - intervalMs);
      await reconciler.run({ since, until: new Date(now) }, 'schedule');
    } finally {
      await lock.release(LOCK);
    }
  }

  function schedule(delayMs: number) {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick()
        .catch((error: unknown) => log.warn({ err: error }, 'scheduled reconciliation failed'))
        .finally(() => schedule(Math.min(intervalMs, 60_000)));
    }, delayMs);
    timer.unref();
  }

  return {
    name: 'reconcile',
    async start() {
      stopped = false;
      schedule(Math.min(intervalMs, 5_000));
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await lock.close();
    },
  };
}
