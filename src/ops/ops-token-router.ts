import express, { type Router } from 'express';
import { z } from 'zod';
import type { Db } from '../db/prisma.js';
import { writeAudit } from '../dead-letters/audit-repository.js';
import { AppError } from '../errors.js';
import { identityOf } from './ops-auth.js';
import { OPS_ROLES } from './ops-roles.js';
import { createOpsToken, listOpsTokens, revokeOpsToken } from './ops-token-repository.js';

/**
 * Personal tokens over the ops API (admin only, OPS_API_ROUTES): `GET /tokens[?revoked=true]`,
 * `POST /tokens` `{ name, role, expires_days? }` (days, default 90, or `"never"`; the token in the
 * answer, once), `DELETE
 * /tokens/:name`. The same as `rentbridge ops-token`, audited under the admin's identity.
 */
const createBody = z
  .object({
    name: z.string().min(1).max(100),
    role: z.enum(OPS_ROLES),
    // Unset: DEFAULT_TOKEN_DAYS (90); `"never"` must be said.
    expires_days: z.union([z.number().int().min(1).max(3650), z.literal('never')]).optional(),
  })
  .strict();

export function createOpsTokenRouter(options: { db: Db }): Router {
  const { db } = options;
  const router = express.Router();

  router.get('/tokens', async (req, res) => {
    res.json({ items: await listOpsTokens(db, { revoked: req.query.revoked === 'true' }) });
  });

  router.post('/tokens', async (req, res) => {
    const parsed = createBody.safeParse(req.body ?? {});
    if (!parsed.success) {
      throw new AppError(
        400,
        'validation_error',
        parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
      );
    }
    const actor = identityOf(res).actor;
    const { token, info } = await createOpsToken(db, {
      name: parsed.data.name,
      role: parsed.data.role,
      ...(parsed.data.expires_days !== undefined && {
        expiresInDays: parsed.data.expires_days === 'never' ? null : parsed.data.expires_days,
      }),
      createdBy: actor,
    });
    await writeAudit(db, {
      actor,
      action: 'token_create',
      target: `ops_token:${info.name}`,
      details: { role: info.role, expires_at: info.expires_at },
    });
    res.status(201).json({ ...info, token });
  });

  router.delete('/tokens/:name', async (req, res) => {
    const name = String(req.params.name);
    if (!(await revokeOpsToken(db, name)))
      throw new AppError(404, 'not_found', `no live token named "${name}"`);
    await writeAudit(db, {
      actor: identityOf(res).actor,
      action: 'token_revoke',
      target: `ops_token:${name}`,
    });
    res.json({ revoked: name });
  });

  return router;
}
