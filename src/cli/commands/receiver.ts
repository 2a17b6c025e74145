import type { Server } from 'node:http';
import { createHttpApp } from '../../http/http-app.js';
import { createIngestWriter } from '../../receiver/ingest-writer.js';
import { createWebhookRouter } from '../../receiver/webhook-router.js';
import { createRuntime } from '../../runtime.js';
import { loadConfigOrExit, runUntilSignal } from '../process.js';

/** `rentbridge receiver`: the webhook receiver, /metrics and health on HTTP_PORT. */
export async function receiver(): Promise<void> {
  const runtime = createRuntime(loadConfigOrExit());
  const { config, logger, db } = runtime;
  await runUntilSignal(logger, async () => {
    const writer = createIngestWriter({ db, databaseUrl: config.DATABASE_URL, logger });
    const app = createHttpApp({
      logger,
      mounts: [{ path: '/webhooks', router: createWebhookRouter({ config, writer, logger }) }],
      ready: async () => {
        try {
          await db.$queryRaw`SELECT 1`;
          return { database: true };
        } catch (error) {
          return { database: (error as Error).message };
        }
      },
    });
    const server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(config.HTTP_PORT, () => resolve(s));
      s.once('error', reject);
    });
    logger.info({ component: 'receiver', port: config.HTTP_PORT }, 'receiver listening');
    return {
      async stop() {
        // Stop taking requests, finish the ones in hand (their transactions), then close.
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await writer.close();
        await runtime.close();
      },
    };
  });
}
