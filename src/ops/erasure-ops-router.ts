import express, { type Router } from 'express';
import { z } from 'zod';
import type { Db } from '../db/prisma.js';
import { checkEmail, erasePerson } from '../erasure/erase-person.js';
import { AppError } from '../errors.js';
import type { TopicSettings } from '../kafka/topic-settings.js';
import { identityOf } from './ops-auth.js';

/**
 * `POST /erasures` `{ "email", "dry_run", "note" }` (admin only, OPS_API_ROUTES): the same erasure
 * as `rentbridge erase`, audited under the admin's identity; answers the receipt (docs/privacy.md).
 */
const body = z
  .object({
    email: z.string(),
    dry_run: z.boolean().optional(),
    note: z.string().max(1000).optional(),
  })
  .strict();

export function createErasureOpsRouter(options: { db: Db; topics: TopicSettings }): Router {
  const router = express.Router();
  router.post('/erasures', async (req, res) => {
    const parsed = body.safeParse(req.body ?? {});
    if (!parsed.success) {
      throw new AppError(
        400,
        'validation_error',
        parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
      );
    }
    const problem = checkEmail(parsed.data.email);
    if (problem) throw new AppError(400, 'validation_error', problem);
    const receipt = await erasePerson(options.db, options.topics, {
      email: parsed.data.email,
      dryRun: parsed.data.dry_run === true,
      ...(parsed.data.note ? { note: parsed.data.note } : {}),
      actor: identityOf(res).actor,
    });
    res.json(receipt);
  });
  return router;
}
