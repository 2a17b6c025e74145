import { createPartnerForRole } from '../../roles/partner-role.js';
import { createPoller, createRequestCounter, pollerIntervals, type Poller } from '../../poller/index.js';
import type { Runtime } from '../../runtime.js';
import { createRuntime } from '../../runtime.js';
import { loadConfigOrExit, runUntilSignal, UsageError } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

/**
 * Builds the poller from the runtime: the Partner API client on the shared rate budget
 * (PARTNER_RATE_LIMIT_PER_MINUTE, the poller always on the low-priority `poll` lane) and the
 * intervals of POLL_INTERVALS / POLL_INTERVAL_SECONDS. `close()` releases what it built.
 */
export function buildPoller(
  runtime: Runtime,
  options: { partnerUrl?: string } = {},
): {
  poller: Poller;
  close(): Promise<void>;
} {
  const { config, logger, db } = runtime;
  const baseUrl = options.partnerUrl ?? config.PARTNER_API_URL;
  if (!baseUrl) {
    throw new UsageError(
      'PARTNER_API_URL is not set: point it at the Partner API (or use `rentbridge start`, which runs the embedded sandbox)',
    );
  }
  const requestCounter = createRequestCounter();
  const { partner, budget } = createPartnerForRole(runtime, { baseUrl, fetch: requestCounter.fetch });
  const poller = createPoller({
    partner,
    db,
    databaseUrl: config.DATABASE_URL,
    logger,
    intervals: pollerIntervals(config),
    defaultIntervalSeconds: config.POLL_INTERVAL_SECONDS,
    requestCounter,
  });
  return {
    poller,
    async close() {
      await budget.close?.();
    },
  };
}

/** `rentbridge poller`: polls every resource on its interval until SIGTERM/SIGINT. */
export async function poller(): Promise<void> {
  const runtime = createRuntime(loadConfigOrExit());
  await requireMigrated(runtime.config.DATABASE_URL, runtime.logger);
  const built = buildPoller(runtime);
  await runUntilSignal(runtime.logger, async () => {
    await built.poller.start();
    return {
      async stop() {
        await built.poller.stop();
        await built.close();
        await runtime.close();
      },
    };
  });
}
