import type { Logger } from '../src/logger.js';
import { createHttpApp } from '../src/http/http-app.js';
import type { IngestWriter } from '../src/receiver/ingest-writer.js';
import { createWebhookRouter } from '../src/receiver/webhook-router.js';

/** The receiver's HTTP app as the benches drive it: PMS webhooks of source `acme`, signed with `secret`. */
export function receiverApp(options: { logger: Logger; writer: IngestWriter; secret: string }) {
  return createHttpApp({
    logger: options.logger,
    mounts: [
      {
        path: '/webhooks',
        router: createWebhookRouter({
          logger: options.logger,
          writer: options.writer,
          config: {
            PARTNER_WEBHOOK_SECRETS: [],
            PMS_WEBHOOK_SECRETS: { acme: [options.secret] },
            WEBHOOK_MAX_BODY_BYTES: 256 * 1024,
            WEBHOOK_TOLERANCE_SECONDS: 300,
          },
        }),
      },
    ],
  });
}
