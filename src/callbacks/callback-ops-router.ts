import express, { type Response, type Router } from 'express';
import { z } from 'zod';
import type { Db } from '../db/prisma.js';
import { writeAudit } from '../dead-letters/audit-repository.js';
import { AppError } from '../errors.js';
import { redeliverCallbacks } from './callback-ops.js';
import { enableEndpoint, endpointStates, listDeliveries, queueBySource } from './callback-repository.js';

/**
 * The ops API of outcome callbacks (under /ops/api, behind OPS_TOKEN like the rest of it), for
 * the console's callbacks card and scripts:
 * - `GET callbacks`: each source's endpoint (breaker, disabled by a 410) and queue, and the dead
 *   deliveries (newest first, `?source=`, `?limit=` up to 500);
 * - `POST callbacks/redeliver` `{ "ids": ["12", …] }` or `{ "all": true, "source"?: "acme" }`,
 *   with an optional `reason`: dead deliveries pending again (audited under the caller's identity);
 * - `POST callbacks/:source/enable`: the source's endpoint, disabled by a 410, enabled again (audited).
 */
const redeliverBody = z
  .object({
    ids: z
      .array(z.string().regex(/^[1-9][0-9]{0,18}$/, 'a delivery id'))
      .min(1)
      .max(1000)
      .optional(),
    all: z.literal(true).optional(),
    source: z.string().min(1).max(200).optional(),
    reason: z.string().max(1000).optional(),
  })
  .strict()
  .refine((b) => (b.ids ? !b.all : b.all), { message: 'give either ids or all: true' });

export function createCallbackOpsRouter(options: {
  db: Db;
  /** The audit's actor of a request: its authenticated identity (src/ops/ops-auth.ts). */
  actorOf: (res: Response) => string;
}): Router {
  const router = express.Router();

  router.get('/callbacks', async (req, res) => {
    const source = typeof req.query.source === 'string' && req.query.source ? req.query.source : undefined;
    const limit = Math.min(500, Math.max(1, Number(req.query.limit ?? 100) || 100));
    const [queues, endpoints, dead] = await Promise.all([
      queueBySource(options.db),
      endpointStates(options.db),
      listDeliveries(options.db, { state: 'dead', ...(source && { source }), limit }),
    ]);
    const sources = [...new Set([...queues.map((q) => q.source), ...endpoints.map((e) => e.source)])].sort();
    res.json({
      sources: sources.map((s) => {
        const q = queues.find((x) => x.source === s);
        const e = endpoints.find((x) => x.source === s);
        return {
          source: s,
          endpoint: e?.disabledUrl ? 'disabled' : (e?.breaker ?? 'closed'),
          disabled_at: e?.disabledAt ?? null,
          consecutive_failures: e?.consecutiveFailures ?? 0,
          pending: q?.pending ?? 0,
          oldest_pending_seconds: Math.round(q?.oldestPendingSeconds ?? 0),
          dead: q?.dead ?? 0,
          delivered: q?.delivered ?? 0,
        };
      }),
      dead: dead.map(({ payload: _payload, ...d }) => d),
    });
  });

  router.post('/callbacks/redeliver', express.json({ limit: '64kb' }), async (req, res) => {
    const parsed = redeliverBody.safeParse(req.body ?? {});
    if (!parsed.success) {
      throw new AppError(400, 'validation_error', parsed.error.issues.map((i) => i.message).join('; '));
    }
    const ids = await redeliverCallbacks(options.db, {
      ...(parsed.data.ids && { ids: parsed.data.ids }),
      ...(parsed.data.all && { all: true }),
      ...(parsed.data.source !== undefined && { source: parsed.data.source }),
      ...(parsed.data.reason !== undefined && { reason: parsed.data.reason }),
      actor: options.actorOf(res),
    });
    res.json({ redelivered: ids });
  });

  router.post('/callbacks/:source/enable', async (req, res) => {
    const source = String(req.params.source);
    const enabled = await enableEndpoint(options.db, source);
    if (enabled) {
      await writeAudit(options.db, {
        actor: options.actorOf(res),
        action: 'callback_enable',
        target: `callback_endpoint:${source}`,
      });
    }
    res.json({ source, enabled });
  });

  return router;
}
