import { topicSettingsFromConfig } from '../kafka/topic-settings.js';
import type { Server } from 'node:http';
import { createCustomerTokens } from '../pms/customer-token-router.js';
import { createHttpApp } from '../http/http-app.js';
import { createLimitedServer } from '../http/server-limits.js';
import { createOpsRouter } from '../ops/ops-router.js';
import { oidcSettings } from '../ops/oidc-settings.js';
import { createCommandStatusRouter } from '../pms/command-status-router.js';
import { reportRolesOnScrape } from '../ops/role-heartbeat.js';
import { createReadiness, type RoleCheck } from './readiness.js';
import { createIngestWriter } from '../receiver/ingest-writer.js';
import { createReceiptPruner } from '../receiver/receipt-pruner.js';
import { retentionText } from '../retention/storage-router.js';
import { createWebhookRouter } from '../receiver/webhook-router.js';
import type { SharedProducer } from '../kafka/shared-producer.js';
import type { Runtime } from './runtime.js';
import type { Component } from './lifecycle.js';

/**
 * The HTTP face of a process on HTTP_PORT. Every role process has one (issue 33): /metrics (the
 * metrics of the work it does), /healthz and /readyz (PostgreSQL, Kafka, migrations, and each of
 * its roles' own checks). The receiver's (and `start`'s) also serves webhooks (/webhooks), the ops
 * API and console (/ops) and customer tokens (/pms).
 */
export interface HttpRole extends Component {
  /** The port it listens on, once started (HTTP_PORT, or the one the OS chose for 0). */
  readonly port: number;
}

export interface HttpRoleOptions {
  /** Serve webhooks, ops and customer tokens (the receiver, `start`). Default true. */
  receiver?: boolean;
  partnerUrl?: string;
  producer?: SharedProducer;
  /** The process's roles for /readyz, read at each request (src/app/composition-root.ts). */
  roles?: () => { started: boolean; checks: readonly RoleCheck[] };
}

export function createHttpRole(runtime: Runtime, options: HttpRoleOptions = {}): HttpRole {
  let started: { port: number; stop(): Promise<void> } | undefined;
  return {
    name: 'http',
    get port() {
      if (!started) throw new Error('the HTTP role is not started');
      return started.port;
    },
    async start() {
      started = await (options.receiver === false
        ? startProbes(runtime, options)
        : startHttp(runtime, options));
    },
    async stop() {
      await started?.stop();
      started = undefined;
    },
  };
}

async function listen(runtime: Runtime, app: ReturnType<typeof createHttpApp>): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const s = createLimitedServer(app, runtime.config);
    s.once('error', reject);
    s.listen(runtime.config.HTTP_PORT, () => resolve(s));
  });
}

async function close(server: Server): Promise<void> {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
}

/** A relay, poller or consumer process: /metrics, /healthz and /readyz only. */
async function startProbes(
  runtime: Runtime,
  options: HttpRoleOptions,
): Promise<{ port: number; stop(): Promise<void> }> {
  const { config, logger } = runtime;
  const readiness = createReadiness(runtime, 3000, { ...(options.roles && { roles: options.roles }) });
  const app = createHttpApp({
    logger,
    mounts: [],
    ready: () => readiness.checks(),
    readyDetails: () => readiness.details(),
    metricsToken: config.METRICS_TOKEN,
  });
  const server = await listen(runtime, app);
  const port = (server.address() as { port: number }).port;
  logger.info({ component: 'http', port }, 'listening: /metrics, /healthz, /readyz');
  return {
    port,
    async stop() {
      await close(server);
      await readiness.close();
    },
  };
}

async function startHttp(
  runtime: Runtime,
  options: HttpRoleOptions,
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
  // The receiver owns its receipts: it prunes them (after OUTBOX_RETENTION_HOURS, as the outbox,
  // and never inside the window a signed copy could be replayed in).
  const receipts = createReceiptPruner({
    db,
    logger,
    retentionHours: config.OUTBOX_RETENTION_HOURS,
    toleranceSeconds: config.WEBHOOK_TOLERANCE_SECONDS,
  });
  const ops = createOpsRouter({
    db,
    kafka: runtime.kafka,
    ...(options.producer && { sharedProducer: options.producer }),
    logger,
    opsToken: config.OPS_TOKEN,
    ...(config.OPS_OIDC_ISSUER && config.OPS_OIDC_CLIENT_ID && { oidc: oidcSettings(config) }),
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    // The console judges and explains by the configured rules, as /readyz and the CLI do.
    insight: { retentionHours: config.OUTBOX_RETENTION_HOURS, relayStallSeconds: config.RELAY_STALL_SECONDS },
    retention: retentionText(config),
    topics: topicSettingsFromConfig(config),
  });
  const readiness = createReadiness(runtime, 3000, {
    writer,
    ...(options.roles && { roles: options.roles }),
  });
  // The process serving the console says which roles run (rentbridge_role_last_seen_seconds).
  reportRolesOnScrape(db);
  const app = createHttpApp({
    logger,
    mounts: [
      { path: '/webhooks', router: createWebhookRouter({ config, writer, logger }) },
      { path: '/ops', router: ops },
      ...(tokens ? [{ path: '/pms', router: tokens.router }] : []),
      // Command status for PMS sources (GET /pms/:source/commands[/:command_id]): signed like webhooks.
      {
        path: '/pms',
        router: createCommandStatusRouter({
          db,
          secrets: config.PMS_WEBHOOK_SECRETS,
          toleranceSeconds: config.WEBHOOK_TOLERANCE_SECONDS,
          logger,
        }),
      },
    ],
    ready: () => readiness.checks(),
    readyDetails: () => readiness.details(),
    metricsToken: config.METRICS_TOKEN,
  });
  const server = await listen(runtime, app);
  const port = (server.address() as { port: number }).port;
  receipts.start();
  logger.info(
    { component: 'http', port },
    tokens
      ? 'listening: /webhooks, /pms, /ops, /metrics, /healthz, /readyz'
      : 'listening: /webhooks, /ops, /metrics, /healthz, /readyz',
  );
  if (!config.OPS_TOKEN && !config.OPS_OIDC_ISSUER) {
    logger.warn(
      { component: 'ops' },
      'neither OPS_TOKEN nor OPS_OIDC_ISSUER is set: only personal tokens open the ops API',
    );
  }
  return {
    port,
    async stop() {
      // Stop taking requests, finish the ones in hand (their transactions), then close.
      await close(server);
      await writer.close();
      await receipts.stop();
      await ops.close();
      await readiness.close();
      await tokens?.close();
    },
  };
}
