import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { createHttpApp } from '../../src/http/http-app.js';
import { createLogger, type Logger } from '../../src/logger.js';
import type { Db } from '../../src/db/prisma.js';
import { createLimitedServer, type ServerLimits } from '../../src/http/server-limits.js';
import { createIngestWriter, type IngestWriter } from '../../src/receiver/ingest-writer.js';
import { createWebhookRouter } from '../../src/receiver/webhook-router.js';

/** Test helpers: secrets, signed deliveries, and the receiver on an ephemeral port. */

export function buildSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** A customer registration command (the `data` of `customer.registration_requested`), unique per call. */
export function buildRegistration(overrides: Record<string, unknown> = {}) {
  const id = `reg-${randomUUID()}`;
  return {
    registration_id: id,
    pms_reference: `tenant-${id}`,
    first_name: 'Ada',
    last_name: 'Lovelace',
    email: `${id}@example.com`,
    phone: '5551234567',
    ...overrides,
  };
}

export function buildRentPayment(overrides: Record<string, unknown> = {}) {
  return {
    type: 'rent_payment.received',
    data: {
      payment_id: `pay-${randomUUID()}`,
      enrollment_id: 'enr-42',
      amount_cents: 125_000,
      paid_on: '2026-11-01',
      period: '2026-11',
      ...overrides,
    },
  };
}

export function buildDecision(overrides: Record<string, unknown> = {}) {
  return {
    type: 'application.decided',
    data: { decision_id: `dec-${randomUUID()}`, application_id: 'app-7', decision: 'approve', ...overrides },
  };
}

export interface SendOptions {
  secret?: string;
  webhookId?: string;
  /** Unix seconds; default now. */
  timestamp?: number;
  /** The raw body instead of JSON.stringify(body). */
  raw?: string | Buffer;
  /** Sign these bytes instead of the body (HMAC over raw bytes, as Standard Webhooks says). */
  signBytes?: Buffer;
  headers?: Record<string, string>;
  unsigned?: boolean;
}

export async function send(
  baseUrl: string,
  path: string,
  body: unknown,
  options: SendOptions = {},
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers; webhookId: string }> {
  const payload = options.raw ?? JSON.stringify(body);
  const webhookId = options.webhookId ?? `msg_${randomUUID()}`;
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if (!options.unsigned) {
    headers['webhook-id'] = webhookId;
    headers['webhook-timestamp'] = String(timestamp);
    headers['webhook-signature'] = options.signBytes
      ? signRaw(options.secret ?? '', webhookId, timestamp, options.signBytes)
      : new Webhook(options.secret ?? '').sign(
          webhookId,
          new Date(timestamp * 1000),
          typeof payload === 'string' ? payload : payload.toString('utf8'),
        );
  }
  const res = await fetch(`${baseUrl}${path}`, { method: 'POST', body: payload, headers });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    /* not JSON */
  }
  return { status: res.status, json, headers: res.headers, webhookId };
}

/** A Standard Webhooks signature over `id.timestamp.` and the body's bytes exactly. */
export function signRaw(secret: string, webhookId: string, timestamp: number, body: Buffer): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key).update(`${webhookId}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

export interface TestReceiver {
  url: string;
  writer: IngestWriter;
  close(): Promise<void>;
}

export async function startReceiver(options: {
  db: Db;
  databaseUrl: string;
  partnerSecrets: string[];
  pmsSecrets: Record<string, string[]>;
  maxBodyBytes?: number;
  /** WEBHOOK_STORAGE_TIMEOUT_MS of the writer. */
  storageTimeoutMs?: number;
  maxInFlight?: number;
  /** RELAY_MAX_BATCH_BYTES as the receiver reads it (the largest event it accepts). */
  maxEventBytes?: number;
  /** Readiness checks; default: ready. */
  ready?: (writer: IngestWriter) => Promise<Record<string, boolean | string>>;
  /** The HTTP server's limits (default: Node's). */
  limits?: ServerLimits;
  metricsToken?: string;
  /** Where the receiver logs; default: nowhere. */
  logger?: Logger;
}): Promise<TestReceiver> {
  const logger = options.logger ?? createLogger({ level: 'silent' });
  const writer = createIngestWriter({
    db: options.db,
    databaseUrl: options.databaseUrl,
    logger,
    ...(options.storageTimeoutMs ? { timeoutMs: options.storageTimeoutMs } : {}),
  });
  const app = createHttpApp({
    logger,
    mounts: [
      {
        path: '/webhooks',
        router: createWebhookRouter({
          logger,
          writer,
          config: {
            PARTNER_WEBHOOK_SECRETS: options.partnerSecrets,
            PMS_WEBHOOK_SECRETS: options.pmsSecrets,
            WEBHOOK_MAX_BODY_BYTES: options.maxBodyBytes ?? 4096,
            WEBHOOK_TOLERANCE_SECONDS: 300,
            ...(options.maxInFlight ? { WEBHOOK_MAX_IN_FLIGHT: options.maxInFlight } : {}),
            ...(options.maxEventBytes ? { RELAY_MAX_BATCH_BYTES: options.maxEventBytes } : {}),
          },
        }),
      },
    ],
    ready: options.ready ? () => options.ready!(writer) : async () => ({ database: true }),
    ...(options.metricsToken ? { metricsToken: options.metricsToken } : {}),
  });
  const server = await new Promise<Server>((resolve) => {
    const s = options.limits ? createLimitedServer(app, options.limits) : undefined;
    if (s) s.listen(0, '127.0.0.1', () => resolve(s));
    else {
      const t = app.listen(0, '127.0.0.1', () => resolve(t));
    }
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    writer,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await writer.close();
    },
  };
}

/** Retries a setup step the shared broker sometimes refuses while another file creates topics. */
export async function retry<T>(step: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await step();
    } catch (error) {
      if (i >= attempts) throw error;
      await new Promise((r) => setTimeout(r, 500 * i));
    }
  }
}
