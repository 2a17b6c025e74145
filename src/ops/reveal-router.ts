import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import type { Db } from '../db/prisma.js';
import { writeAudit } from '../dead-letters/audit-repository.js';
import type { DeadLetterService } from '../dead-letters/dead-letter-service.js';
import { AppError } from '../errors.js';
import { isPersonalSearch, maskPersonal, REVEAL_KINDS, revealTarget } from '../personal-data.js';
import { createReconcileRepository } from '../reconcile/reconcile-repository.js';
import { identityOf } from './ops-auth.js';
import { roleAllows } from './ops-roles.js';
import { readTrace } from './insight-router.js';

/**
 * Personal data on the ops API (decision 052): every answer is masked (`maskPersonalAnswers`);
 * an operator or admin sees one item whole through `POST /reveal` with a reason, audited as
 * `reveal` (the item and the reason, never a value); a search by a personal value is a reveal too
 * (`searchIsReveal`). The viewer's 403 for `/reveal` is ops-auth's, from OPS_API_ROUTES.
 */

const revealBody = z.object({
  kind: z.enum(REVEAL_KINDS),
  id: z.union([z.string().min(1).max(300), z.number().int().positive()]),
  reason: z.string().trim().min(3, 'say why (at least 3 characters)').max(2000),
  /** A trace only: which command, when several share the id. */
  source: z.string().max(200).optional(),
  type: z.string().max(100).optional(),
});

/** Every JSON answer of the API masked, unless the handler revealed it (`res.locals.revealed`). */
export function maskPersonalAnswers(): RequestHandler {
  return (_req, res, next) => {
    const json = res.json.bind(res);
    res.json = (body: unknown) => json(res.locals.revealed === true ? body : maskPersonal(body));
    next();
  };
}

/**
 * A search by a personal value (a trace by an e-mail, dead letters by an e-mail or a phone) is a
 * reveal: it needs the operator role and a `reason`, and is audited as one. Its answer is masked
 * all the same; the values of an item it finds are one more reveal away.
 */
export function searchIsReveal(db: Db): RequestHandler {
  return async (req, res, next) => {
    const searched = personalSearchOf(req);
    if (searched === null) return next();
    const me = identityOf(res);
    if (!roleAllows(me.role, 'operator')) {
      throw new AppError(
        403,
        'forbidden',
        'a search by a personal value is a reveal: it needs the operator role',
        {
          extra: { role_needed: 'operator' },
        },
      );
    }
    const reason = typeof req.query.reason === 'string' ? req.query.reason.trim() : '';
    if (reason.length < 3) {
      throw new AppError(
        400,
        'reason_required',
        'a search by a personal value is a reveal: give ?reason= (at least 3 characters), kept in the audit',
      );
    }
    await writeAudit(db, {
      actor: me.actor,
      action: 'reveal',
      target: revealTarget('search', searched),
      reason,
      details: { kind: 'search', route: req.path.startsWith('/trace/') ? 'trace' : 'dead-letters' },
    });
    next();
  };
}

function personalSearchOf(req: Request): string | null {
  if (req.method !== 'GET') return null;
  const trace = /^\/trace\/([^/]+)$/.exec(req.path);
  if (trace) {
    const id = decodeURIComponent(trace[1]!);
    return isPersonalSearch(id) ? id : null;
  }
  if (req.path === '/dead-letters' || req.path === '/dead-letters/') {
    for (const name of ['search', 'key']) {
      const value = req.query[name];
      if (typeof value === 'string' && isPersonalSearch(value)) return value;
    }
  }
  return null;
}

export interface RevealRouterOptions {
  db: Db;
  letters: DeadLetterService;
  topicPrefix: string;
  retentionHours?: number;
}

/** `POST /reveal` `{ kind, id, reason }`: the item unmasked, for the operator and admin roles. */
export function createRevealRouter(options: RevealRouterOptions): Router {
  const router = express.Router();
  const reconciliation = createReconcileRepository(options.db);

  router.post('/reveal', async (req, res: Response) => {
    const parsed = revealBody.safeParse(req.body ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new AppError(400, 'validation_error', `${issue?.path.join('.') || 'body'}: ${issue?.message}`);
    }
    const { kind, id, reason } = parsed.data;
    const item = await revealed(options, reconciliation, parsed.data);
    if (item === null) throw new AppError(404, 'not_found', `no ${kind.replace('_', ' ')} ${String(id)}`);
    await writeAudit(options.db, {
      actor: identityOf(res).actor,
      action: 'reveal',
      target: revealTarget(kind, id),
      reason,
      details: { kind },
    });
    res.locals.revealed = true;
    res.json({ kind, id, item });
  });

  return router;
}

async function revealed(
  options: RevealRouterOptions,
  reconciliation: ReturnType<typeof createReconcileRepository>,
  body: z.infer<typeof revealBody>,
): Promise<unknown> {
  const number = () => {
    const n = Number(body.id);
    if (!Number.isSafeInteger(n) || n < 1)
      throw new AppError(400, 'validation_error', 'id: a positive integer');
    return n;
  };
  switch (body.kind) {
    case 'dead_letter':
      return options.letters.show(number());
    case 'reconciliation_item':
      return reconciliation.item(number());
    case 'trace':
      return readTrace(options, String(body.id), { source: body.source, type: body.type });
  }
}
