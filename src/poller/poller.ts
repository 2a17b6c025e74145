import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import { RESOURCES, type Resource } from '../partner/resources.js';
import { tracePollPass } from '../telemetry.js';
import { exposeMetrics, metrics, startAtZero } from '../metrics.js';
import { intervalSeconds } from './collections.js';
import { createPassHealth, type PassHealth, type PassOutcome } from './pass-health.js';
import { staleAfterSeconds } from './pass-staleness.js';
import type { PollerPartner } from './partner-port.js';
import type { PassStats } from './poller-repository.js';
import {
  PassStoppedError,
  PER_PAGE,
  runResourcePass,
  type PageSink,
  type PollerHooks,
} from './resource-pass.js';
import type { RequestCounter } from './request-counter.js';
import { createResourceLock, type ResourceLock } from './resource-lock.js';

export interface PollerOptions {
  /** The Partner API client; the poller always asks for the low-priority `poll` lane. */
  partner: PollerPartner;
  db: Db;
  /** The DATABASE_URL: the per-resource advisory lock holds a connection of its own. */
  databaseUrl: string;
  logger: Logger;
  /**
   * Seconds between passes, per resource. Default: `intervalSeconds(resource, config)` from
   * `POLL_INTERVALS`, the built-in defaults and `POLL_INTERVAL_SECONDS` (see collections.ts);
   * build it with `pollerIntervals(config)`.
   */
  intervals?: Partial<Record<Resource, number>>;
  /** Interval of a resource `intervals` does not name and that has no built-in default. Default 300 s. */
  defaultIntervalSeconds?: number;
  /** Resources polled. Default: all of them (RESOURCES). */
  resources?: readonly Resource[];
  /** First pass of a date-filtered collection reads from this date (YYYY-MM-DD). Default: everything. */
  backfillFrom?: string | null;
  /** A long pass logs its progress every this many pages. Default 10. */
  progressEveryPages?: number;
  /** Records per page. Default 1000, the API's maximum (spec 4.5): the fewest requests. */
  perPage?: number;
  /** The clock whose UTC date becomes the cursor (tests move it across midnight). Default: now. */
  now?: () => Date;
  hooks?: PollerHooks;
  /**
   * Counts the requests each pass sends, re-reads included (give its `fetch` to the client).
   * Without it, a pass reports the pages it received.
   */
  requestCounter?: RequestCounter;
  /** The guard's snapshot store: pages of enrollments and applications go there too (issue 43). */
  snapshots?: PageSink;
  /** Default: an advisory lock on a connection to `databaseUrl`. */
  lock?: ResourceLock;
}

export type { PassOutcome };

export interface PassSummary {
  resource: Resource;
  /** `skipped`: another process (or pass) is polling this resource right now. */
  outcome: PassOutcome;
  stats?: PassStats;
  error?: string;
}

export interface Poller {
  /** One pass over every resource (customers before their issues), or over one. Never throws for a pass. */
  runOnce(resource?: Resource): Promise<PassSummary[]>;
  /** Polls each resource on its own interval until `stop()`; the first passes start now. */
  start(): Promise<void>;
  /** Stops scheduling, lets running passes stop after their current page (cursors unmoved), releases locks. */
  stop(): Promise<void>;
  /** Its passes, for /readyz. */
  readonly health: PassHealth;
}

/** Per-resource intervals from the configuration. */
export function pollerIntervals(config: {
  POLL_INTERVAL_SECONDS: number;
  POLL_INTERVALS: Record<string, number>;
}): Record<Resource, number> {
  return Object.fromEntries(RESOURCES.map((r) => [r, intervalSeconds(r, config)])) as Record<
    Resource,
    number
  >;
}

const lastSuccessSeeded = new Set<Resource>();

export function createPoller(options: PollerOptions): Poller {
  const logger = options.logger.child({ component: 'poller' });
  const resources = options.resources ?? RESOURCES;
  const ownLock = options.lock === undefined;
  const health = createPassHealth((r) => staleAfterOf(r));
  exposeMetrics('poller');
  startAtZero(metrics.pollerRequests, { resource: resources });
  startAtZero(metrics.pollerChanges, { resource: resources });
  // 0 means "no successful pass yet" (the epoch): a poller that never succeeds goes stale and
  // alerts (RentbridgePollerStale waits 15 minutes from the process's start for a first pass).
  // Once per process: a second poller (tests) must not wipe the first one's successes.
  for (const resource of resources) {
    if (lastSuccessSeeded.has(resource)) continue;
    lastSuccessSeeded.add(resource);
    metrics.pollerLastSuccess.set({ resource }, 0);
    metrics.pollerPassProgress.set({ resource }, 0);
  }
  const lock = options.lock ?? createResourceLock(options.databaseUrl, logger);
  const timers = new Map<Resource, NodeJS.Timeout>();
  const running = new Set<Promise<unknown>>();
  let stopping = false;
  let abort = new AbortController();
  const intervalOf = (r: Resource) =>
    options.intervals?.[r] ??
    intervalSeconds(r, { POLL_INTERVAL_SECONDS: options.defaultIntervalSeconds ?? 300, POLL_INTERVALS: {} });
  // Each resource's stale limit (/readyz, the overview, RentbridgePollerStale): three of its
  // intervals, at least 15 min.
  const staleAfterOf = (r: Resource) => staleAfterSeconds(intervalOf(r));
  for (const resource of resources) metrics.pollerStaleAfter.set({ resource }, staleAfterOf(resource));

  async function pass(resource: Resource): Promise<PassSummary> {
    const summary = await attempt(resource);
    health.record(summary);
    return summary;
  }

  async function attempt(resource: Resource): Promise<PassSummary> {
    let locked: boolean;
    try {
      locked = await lock.tryAcquire(resource);
    } catch (error) {
      logger.error({ resource, err: error }, 'poller lock unavailable: pass not run');
      return { resource, outcome: 'failed', error: error instanceof Error ? error.message : String(error) };
    }
    if (!locked) {
      logger.debug({ resource }, 'resource polled elsewhere: skipped');
      return { resource, outcome: 'skipped' };
    }
    try {
      const stats = await tracePollPass(resource, () =>
        runResourcePass({
          partner: options.partner,
          db: options.db,
          logger,
          resource,
          backfillFrom: options.backfillFrom ?? null,
          progressEveryPages: options.progressEveryPages ?? 10,
          staleAfterSeconds: staleAfterOf(resource),
          perPage: options.perPage ?? PER_PAGE,
          now: options.now ?? (() => new Date()),
          hooks: options.hooks ?? {},
          isStopping: () => stopping,
          signal: abort.signal,
          onProgress: (progress) => health.progress(progress),
          ...(options.requestCounter && { requestCounter: options.requestCounter }),
          ...(options.snapshots && { snapshots: options.snapshots }),
        }),
      );
      return { resource, outcome: 'completed', stats };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof PassStoppedError) logger.info({ resource }, message);
      else logger.error({ resource, err: error }, 'poller pass failed: cursor unchanged');
      return { resource, outcome: 'failed', error: message };
    } finally {
      await lock
        .release(resource)
        .catch((e: unknown) => logger.warn({ resource, err: e }, 'lock release failed'));
    }
  }

  function track<T>(p: Promise<T>): Promise<T> {
    running.add(p);
    void p.finally(() => running.delete(p)).catch(() => undefined);
    return p;
  }

  function schedule(resource: Resource, delayMs: number): void {
    if (stopping) return;
    const timer = setTimeout(() => {
      void track(pass(resource)).then(() => {
        schedule(resource, intervalOf(resource) * 1000);
      });
    }, delayMs);
    timers.set(resource, timer);
  }

  return {
    health,
    async runOnce(resource) {
      const list = resource ? [resource] : resources;
      const summaries: PassSummary[] = [];
      // Sequential, in RESOURCES order: customers are known before their issues are read.
      for (const r of list) {
        if (stopping) break;
        summaries.push(await track(pass(r)));
      }
      return summaries;
    },
    async start() {
      stopping = false;
      abort = new AbortController();
      logger.info(
        { intervals: Object.fromEntries(resources.map((r) => [r, intervalOf(r)])) },
        'poller started',
      );
      for (const r of resources) schedule(r, 0);
    },
    async stop() {
      stopping = true;
      // Requests in flight end now (their pass stops, cursor unmoved) rather than after their budget wait.
      abort.abort(new PassStoppedError('poller stopping'));
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      await Promise.allSettled([...running]);
      if (ownLock) await lock.close();
      logger.info('poller stopped');
    },
  };
}
