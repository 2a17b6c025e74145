import express, { type Router } from 'express';
import type { Db } from '../db/prisma.js';
import { AppError } from '../errors.js';
import { createReconcileRepository } from '../reconcile/reconcile-repository.js';
import { RECONCILE_VERDICTS } from '../reconcile/reconcile-types.js';

/**
 * The console's Reconciliation page, read-only, under the ops API (issue 45): `GET
 * /reconciliation/runs` (the latest runs, counts by verdict) and `GET /reconciliation/runs/:id`
 * (one run: its drift by command type and source, and its items, drift first; `?verdict=` filters).
 * Each item carries what the console links to its command's trace (source, type, command id).
 */
export function createReconcileOpsRouter(options: { db: Db }): Router {
  const repository = createReconcileRepository(options.db);
  const router = express.Router();

  router.get('/reconciliation/runs', async (req, res) => {
    const limit = Math.min(200, Math.max(1, Number(req.query.limit ?? 50) || 50));
    res.json({ items: await repository.runs(limit) });
  });

  router.get('/reconciliation/runs/:id', async (req, res) => {
    const id = Number(req.params.id);
    if (!Number.isSafeInteger(id) || id < 1) throw new AppError(400, 'validation_error', 'id: a run number');
    const verdict =
      typeof req.query.verdict === 'string' && req.query.verdict !== '' ? req.query.verdict : undefined;
    if (verdict !== undefined && !(RECONCILE_VERDICTS as readonly string[]).includes(verdict)) {
      throw new AppError(400, 'validation_error', `verdict: one of ${RECONCILE_VERDICTS.join(', ')}`);
    }
    const run = await repository.run(id);
    if (!run) throw new AppError(404, 'not_found', `no reconciliation run ${id}`);
    const items = await repository.items(id, { ...(verdict && { verdict }), limit: 1000 });
    // Drift first: what needs someone, then what settled, then the confirmed.
    const rank = (v: string) => (v === 'confirmed' ? 2 : v === 'settled_applied' ? 1 : 0);
    items.sort((a, b) => rank(a.verdict) - rank(b.verdict));
    res.json({ run, drift: await repository.driftBy(id), items });
  });

  return router;
}
