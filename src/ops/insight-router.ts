import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import express, { type Router } from 'express';
import type { Registry } from 'prom-client';
import { withCallbackSteps } from '../callbacks/callback-trace.js';
import type { Db } from '../db/prisma.js';
import { AppError } from '../errors.js';
import { registry as processRegistry } from '../metrics.js';
import { ID_KINDS, traceId, type IdKind } from '../event-trace/trace.js';
import { refusalOf } from '../receiver/refusals.js';
import { SnapshotRing } from './overview/metric-samples.js';
import { buildOverview } from './overview/overview.js';

export interface InsightRouterOptions {
  db: Db;
  /** KAFKA_TOPIC_PREFIX. */
  topicPrefix: string;
  /** OUTBOX_RETENTION_HOURS, to say why a trail ends. Default 72. */
  retentionHours?: number;
  /** RELAY_STALL_SECONDS: the overview's relay rule is /readyz's. Default 120. */
  relayStallSeconds?: number;
  /** Where the in-process figures come from. Default: this process's /metrics registry. */
  registry?: Registry;
}

/**
 * The console's read-only views, mounted under the ops API (bearer OPS_TOKEN): `GET /overview`
 * (the flow, its figures and last-hour charts) and `GET /trace/:id[?as=<kind>]` (one event's life).
 */
export function createInsightRouter(options: InsightRouterOptions): Router {
  const ring = new SnapshotRing();
  const router = express.Router();

  router.get('/overview', async (_req, res) => {
    res.json(
      await buildOverview({
        db: options.db,
        registry: options.registry ?? processRegistry,
        ring,
        topicPrefix: options.topicPrefix,
        ...(options.relayStallSeconds !== undefined && { relayStallSeconds: options.relayStallSeconds }),
      }),
    );
  });

  router.get('/trace/:id', async (req, res) => {
    res.json(await readTrace(options, String(req.params.id ?? ''), req.query));
  });

  return router;
}

/** One event's life, the answer of `GET /trace/:id` (masked there) and of a reveal of a trace. */
export async function readTrace(
  options: Pick<InsightRouterOptions, 'db' | 'topicPrefix' | 'retentionHours'>,
  given: string,
  query: { as?: unknown; source?: unknown; type?: unknown },
) {
  const id = given.trim();
  if (!id || id.length > 300) throw new AppError(400, 'validation_error', 'id: 1 to 300 characters');
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(id)) {
    throw new AppError(400, 'validation_error', 'id: must not contain control characters');
  }
  const as = query.as;
  if (as !== undefined && !(ID_KINDS as readonly unknown[]).includes(as))
    throw new AppError(400, 'validation_error', `as: one of ${ID_KINDS.join(', ')}`);
  const traced = await traceId(options.db, id, {
    ...(as !== undefined && { as: as as IdKind }),
    topicPrefix: options.topicPrefix,
    retentionHours: options.retentionHours ?? 72,
    // When several commands share the id: `?source=acme&type=rental_payment` picks one.
    ...(typeof query.source === 'string' && { source: query.source }),
    ...(typeof query.type === 'string' && query.type !== '' && { commandType: query.type }),
  });
  // A webhook this process refused: never stored, but remembered for an hour (src/receiver/refusals.ts).
  const refused = traced.found ? null : refusalOf(id);
  if (refused) {
    traced.ends = [
      `refused at the receiver: ${refused.reason} (HTTP ${refused.status} ${refused.code}, source ${refused.source}, ${refused.at.toISOString()}); nothing of it was stored, and this process keeps the refusal for an hour`,
    ];
  }
  // With the outcome callbacks of the commands it shows (src/callbacks/).
  return withCallbackSteps(options.db, traced);
}

/**
 * The console's third-party browser files, served from node_modules as installed (no build step):
 * uPlot, the charting library of the overview, at `/ops/vendor/uplot/`.
 */
export function createConsoleVendorRouter(): Router {
  const uplotDist = dirname(createRequire(import.meta.url).resolve('uplot'));
  const router = express.Router();
  router.use('/uplot', express.static(uplotDist, { index: false, maxAge: '1d' }));
  return router;
}
