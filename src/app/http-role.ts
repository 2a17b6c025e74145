import type { Server } from 'node:http';
import { createCustomerTokens } from '../access-tokens/customer-token-router.js';
import { createHttpApp } from '../http/http-app.js';
import { createLimitedServer } from '../http/server-limits.js';
import { createOpsRouter } from '../ops/ops-router.js';
import { reportRolesOnScrape } from '../ops/role-heartbeat.js';
import { createReadiness } from '../readiness.js';
import { createIngestWriter } from '../receiver/ingest-writer.js';
import { createReceiptPruner } from '../receiver/receipt-pruner.js';
import { createWebhookRouter } from '../receiver/webhook-router.js';
import type { SharedProducer } from '../kafka/shared-producer.js';
import type { Runtime } from '../runtime.js';
import type { Component } from './lifecycle.js';

/**
 * The HTTP face of a process on HTTP_PORT: webhooks (/webhooks), the ops API and console (/ops),
 * /metrics, /healthz and /readyz (PostgreSQL, Kafka, migrations).
 */
export interface HttpRole extends Component {
  /** The port it listens on, once started (HTTP_PORT, or the one the OS chose for 0). */
  readonly port: number;
}

export function createHttpRole(
  runtime: Runtime,
  options: { partnerUrl?: string; producer?: SharedProducer } = {},
): HttpRole {
  let started: { port: number; stop(): Promise<void> } | undefined;
  return {
    name: 'http',
    get port() {
      if (!started) throw new Error('the HTTP role is not started');
      return started.port;
    },
    async start() {
      started = await startHttp(runtime, options);
    },
    async stop() {
      await started?.stop();
      started = undefined;
    },
  };
}

async function startHttp(
  runtime: Runtime,
  options: { partnerUrl?: string; producer?: SharedProducer },
): Promise<{ port: number; stop(): Promise<void> }> {
  const { config, logger, db } = runtime;
  const partnerUrl = options.partnerUrl ?? config.PARTNER_API_URL;
  // Customer access tokens for SDK use (POST /pms/:source/customer-access-tokens): a budget of
  // their own, never the 650/min the writes depend on.
  const tokens = partnerUrl ? createCustomerTokens({ db, partnerUrl, config, logger }) : null;
  const writer = createIngestWriter({
    db,
    databaseUrl: config.DATABASE_URL,
    logger,
    timeoutMs: config.WEBHOOK_STORAGE_TIMEOUT_MS,
  });
  // The receiver owns its receipts: it prunes them (after OUTBOX_RETENTION_HOURS, as the outbox).
  const receipts = createReceiptPruner({ db, logger, retentionHours: config.OUTBOX_RETENTION_HOURS });
  const ops = createOpsRouter({
    db,
    kafka: runtime.kafka,
    ...(options.producer && { sharedProducer: options.producer }),
    logger,
    opsToken: config.OPS_TOKEN,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    // The console judges and explains by the configured rules, as /readyz and the CLI do.
    insight: { retentionHours: config.OUTBOX_RETENTION_HOURS, relayStallSeconds: config.RELAY_STALL_SECONDS },
  });
  const readiness = createReadiness(runtime, 3000, { writer });
  // The process serving the console says which roles run (rentbridge_role_last_seen_seconds).
  reportRolesOnScrape(db);
  const app = createHttpApp({
    logger,
    mounts: [
      { path: '/webhooks', router: createWebhookRouter({ config, writer, logger }) },
      { path: '/ops', router: ops },
      ...(tokens ? [{ path: '/pms', router: tokens.router }] : []),
    ],
    ready: () => readiness.checks(),
    metricsToken: config.METRICS_TOKEN,
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = createLimitedServer(app, config);
    s.once('error', reject);
    s.listen(config.HTTP_PORT, () => resolve(s));
  });
  const port = (server.address() as { port: number }).port;
  receipts.start();
  logger.info(
    { component: 'http', port },
    tokens
      ? 'listening: /webhooks, /pms, /ops, /metrics, /healthz, /readyz'
      : 'listening: /webhooks, /ops, /metrics, /healthz, /readyz',
  );
  if (!config.OPS_TOKEN) logger.warn({ component: 'ops' }, 'OPS_TOKEN is not set: the ops API answers 401');
  return {
    port,
    async stop() {
      // Stop taking requests, finish the ones in hand (their transactions), then close.
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await writer.close();
      await receipts.stop();
      await ops.close();
      await readiness.close();
      await tokens?.close();
    },
  };
}
