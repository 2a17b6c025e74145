import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import type { CallbackEndpointConfig } from '../config/callback-config.js';
import { BREAKER_VALUES, callbackMetrics } from './callback-metrics.js';
import {
  claimDue,
  disableEndpoint,
  enableEndpoint,
  endpointStates,
  queueBySource,
  saveBreaker,
  type Delivery,
} from './callback-repository.js';
import { nextAttemptAt, type RetrySchedule } from './callback-schedule.js';
import { sendCallback, type AttemptOutcome } from './callback-sender.js';
import { createAdaptiveLimit } from './adaptive-limit.js';
import { createAttemptRecorder } from './attempt-recorder.js';
import { createCircuitBreaker, type BreakerOptions, type BreakerState } from './circuit-breaker.js';

export interface CallbackDelivererOptions {
  db: Db;
  logger: Logger;
  endpoints: Readonly<Record<string, CallbackEndpointConfig>>;
  /** CALLBACK_TIMEOUT_MS, unless a source sets its own. */
  timeoutMs: number;
  schedule: RetrySchedule;
  breaker: BreakerOptions;
  /** In flight at once per source to start from (CALLBACK_CONCURRENCY). */
  concurrency: number;
  /** The most in flight at once per source, adapted up to (CALLBACK_MAX_CONCURRENCY; default `concurrency`). */
  maxConcurrency?: number;
  /** How often each source looks for due deliveries, and re-reads its endpoint's state. */
  pollMs: number;
  /** Sends one callback (tests and the bench may wrap it). Default `sendCallback`. */
  send?: typeof sendCallback;
}

export interface CallbackDeliverer {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** New deliveries for these sources: their loops look at once. */
  wake(sources: Iterable<string>): void;
  /** `true`, or why a source's loop is not running. */
  check(): true | string;
  /** Each source's breaker as this process sees it. */
  breakers(): Record<string, BreakerState | 'disabled'>;
}

/** How much longer than its time-out a claimed delivery stays leased to this process. */
const LEASE_MARGIN_MS = 5000;

/**
 * One delivery loop per source (per-source isolation: a source's slow or dead endpoint takes only
 * its own slots and its own breaker; another source's loop never waits for it). Each loop claims
 * due deliveries up to its allowance (its adaptive limit, src/callbacks/adaptive-limit.ts, from
 * CALLBACK_CONCURRENCY up to CALLBACK_MAX_CONCURRENCY; one while the breaker probes, none while it
 * is open), POSTs them, and records each attempt with the delivery's next state.
 */
export function createCallbackDeliverer(options: CallbackDelivererOptions): CallbackDeliverer {
  const log = options.logger.child({ component: 'callbacks' });
  const send = options.send ?? sendCallback;
  // One for every source's loop: the attempts that end together are written together.
  const recorder = createAttemptRecorder(options.db);
  const loops = new Map(Object.entries(options.endpoints).map(([s, e]) => [s, sourceLoop(s, e)]));
  let gauges: NodeJS.Timeout | undefined;

  function sourceLoop(source: string, endpoint: CallbackEndpointConfig) {
    const breaker = createCircuitBreaker(options.breaker);
    const limit = createAdaptiveLimit({
      initial: options.concurrency,
      max: options.maxConcurrency ?? options.concurrency,
    });
    callbackMetrics.limit.set({ source }, limit.current());
    const timeoutMs = endpoint.timeout_ms ?? options.timeoutMs;
    const leaseMs = 2 * timeoutMs + LEASE_MARGIN_MS;
    const slog = log.child({ source, endpoint: new URL(endpoint.url).origin });
    const inFlight = new Set<Promise<void>>();
    let disabled = false;
    /** When this process last saved a 410's disable (a read of PostgreSQL begun before it is stale). */
    let goneAt = 0;
    let running = false;
    let again = false;
    let stopped = true;
    let timer: NodeJS.Timeout | undefined;
    let shown: BreakerState | 'disabled' | undefined;
    let lastError: string | null = null;

    function show(state: BreakerState | 'disabled') {
      callbackMetrics.breaker.set({ source }, BREAKER_VALUES[state]);
      if (state === shown) return;
      shown = state;
      if (state !== 'closed')
        slog.warn(
          { breaker: state, failures: breaker.consecutiveFailures() },
          'callback endpoint not healthy',
        );
      else slog.info({ breaker: state }, 'callback endpoint healthy');
      saveBreaker(
        options.db,
        source,
        state === 'disabled' ? 'closed' : state,
        breaker.consecutiveFailures(),
      ).catch((err: unknown) => slog.debug({ err }, 'breaker state not saved'));
    }

    /** Whether a 410 disabled this URL (PostgreSQL says, for every process); another URL enables it again. */
    async function readDisabled(): Promise<void> {
      const asked = Date.now();
      const row = (await endpointStates(options.db)).find((e) => e.source === source);
      // A 410 met while this read was under way is newer than what it read.
      if (goneAt >= asked) return;
      // Disabled at another URL: the endpoint was configured again, so it is enabled again.
      if (row?.disabledUrl && row.disabledUrl !== endpoint.url) await enableEndpoint(options.db, source);
      const was = disabled;
      disabled = row?.disabledUrl === endpoint.url;
      if (was && !disabled) breaker.reset();
    }

    async function attempt(delivery: Delivery): Promise<void> {
      const sentAt = Date.now();
      const outcome = await send({
        url: endpoint.url,
        secrets: endpoint.secrets,
        webhookId: delivery.webhookId,
        body: delivery.payload,
        timeoutMs,
      });
      callbackMetrics.deliveries.inc({ source, result: outcome.result });
      // A 410 says nothing of the endpoint's load: it disables the endpoint instead.
      if (outcome.result !== 'gone') {
        const ok = outcome.result === 'delivered';
        const { durationMs } = outcome;
        callbackMetrics.limit.set(
          { source },
          limit.record({ ok, durationMs, sentAt, inFlight: inFlight.size }),
        );
      }
      // Saved before the next poll re-reads PostgreSQL, which would otherwise clear `disabled`
      // and let a 410 endpoint get one more attempt.
      if (outcome.result === 'gone') {
        disabled = true;
        // Until the disable is committed, a read of PostgreSQL (even one begun after the 410)
        // still sees the endpoint enabled: every read that ends before the save is stale, and so
        // is every read begun before it ended. (Under load, a poll read between the 410 and the
        // commit cleared `disabled` and sent the 410 endpoint another attempt.)
        goneAt = Number.POSITIVE_INFINITY;
        await disableEndpoint(options.db, source, endpoint.url).catch((err: unknown) =>
          slog.error({ err }, 'endpoint disabled here but not saved'),
        );
        goneAt = Date.now();
      }
      await recorder.record({
        deliveryId: delivery.id,
        url: endpoint.url,
        attempt: outcome,
        next: next(delivery, outcome),
      });
    }

    function next(delivery: Delivery, outcome: AttemptOutcome) {
      const fields = {
        deliveryId: delivery.id,
        webhookId: delivery.webhookId,
        commandId: delivery.commandId,
      };
      if (outcome.result === 'delivered') {
        breaker.record(true);
        callbackMetrics.latency.observe({ source }, (Date.now() - delivery.createdAt.getTime()) / 1000);
        slog.debug({ ...fields, status: outcome.httpStatus, ms: outcome.durationMs }, 'callback delivered');
        return { state: 'delivered' as const, nextAttemptAt: null, failures: delivery.failures };
      }
      if (outcome.result === 'gone') {
        // 410: the PMS says the endpoint is gone. Disabled until configured again; the delivery
        // waits (pending) for that.
        slog.warn({ ...fields }, 'callback endpoint answered 410 Gone: disabled until configured again');
        return { state: 'pending' as const, nextAttemptAt: new Date(), failures: delivery.failures };
      }
      breaker.record(false);
      lastError = outcome.error;
      const failures = delivery.failures + 1;
      const at = nextAttemptAt(options.schedule, delivery.retryFrom, failures);
      if (!at) {
        callbackMetrics.deadLettered.inc({ source });
        slog.warn(
          { ...fields, attempts: delivery.attempts + 1, error: outcome.error },
          'callback dead-lettered: retries ran out',
        );
        return { state: 'dead' as const, nextAttemptAt: null, failures };
      }
      slog.info(
        { ...fields, result: outcome.result, error: outcome.error, retryAt: at.toISOString() },
        'callback failed, will retry',
      );
      return { state: 'pending' as const, nextAttemptAt: at, failures };
    }

    async function tick(): Promise<void> {
      if (stopped) return;
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        do {
          again = false;
          if (disabled) break;
          const allowance = breaker.allowance(limit.current()) - inFlight.size;
          const claimed = await claimDue(options.db, source, allowance, leaseMs);
          for (const delivery of claimed) {
            const p: Promise<void> = attempt(delivery)
              .catch((err: unknown) =>
                slog.error({ err, deliveryId: delivery.id }, 'callback attempt not recorded'),
              )
              .finally(() => {
                inFlight.delete(p);
                show(disabled ? 'disabled' : breaker.state());
                void tick();
              });
            inFlight.add(p);
          }
          // A full claim: more may be due at once.
          if (claimed.length > 0 && claimed.length === allowance) again = true;
        } while (again && !stopped);
      } catch (err) {
        slog.warn({ err }, 'callback loop: PostgreSQL did not answer, trying again');
      } finally {
        running = false;
      }
    }

    function schedule(): void {
      if (stopped) return;
      const probeAt = breaker.state() === 'open' ? breaker.probeAt() : null;
      const wait = probeAt ? Math.min(options.pollMs, Math.max(0, probeAt - Date.now()) + 1) : options.pollMs;
      timer = setTimeout(() => {
        void readDisabled()
          .catch((err: unknown) => slog.debug({ err }, 'endpoint state not read'))
          .then(() => show(disabled ? 'disabled' : breaker.state()))
          .then(tick)
          .finally(schedule);
      }, wait);
    }

    return {
      async start() {
        stopped = false;
        await readDisabled();
        show(disabled ? 'disabled' : 'closed');
        schedule();
        void tick();
      },
      async stop() {
        stopped = true;
        clearTimeout(timer);
        await Promise.allSettled([...inFlight]);
      },
      wake: () => void tick(),
      state: (): BreakerState | 'disabled' => (disabled ? 'disabled' : breaker.state()),
      lastError: () => lastError,
      isRunning: () => !stopped,
    };
  }

  async function refreshGauges(): Promise<void> {
    const queues = await queueBySource(options.db);
    for (const source of loops.keys()) {
      const q = queues.find((x) => x.source === source);
      callbackMetrics.queueAge.set({ source }, q?.oldestPendingSeconds ?? 0);
      callbackMetrics.pending.set({ source }, q?.pending ?? 0);
    }
  }

  return {
    async start() {
      for (const loop of loops.values()) await loop.start();
      await refreshGauges();
      gauges = setInterval(() => {
        refreshGauges().catch((err: unknown) => log.debug({ err }, 'callback gauges not refreshed'));
      }, 5000);
      gauges.unref();
      log.info({ sources: [...loops.keys()] }, 'callback delivery started');
    },
    async stop() {
      clearInterval(gauges);
      await Promise.all([...loops.values()].map((l) => l.stop()));
    },
    wake(sources) {
      for (const s of sources) loops.get(s)?.wake();
    },
    check() {
      for (const [source, loop] of loops)
        if (!loop.isRunning()) return `the callback loop of ${source} is stopped`;
      return true;
    },
    breakers() {
      return Object.fromEntries([...loops].map(([s, l]) => [s, l.state()]));
    },
  };
}
