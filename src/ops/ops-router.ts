import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Request, type Response, type Router } from 'express';
import type { Kafka, Producer } from 'kafkajs';
import { z } from 'zod';
import { createCallbackOpsRouter } from '../callbacks/callback-ops-router.js';
import type { Db } from '../db/prisma.js';
import {
  auditFiltersSchema,
  deadLetterFiltersSchema,
  filtersFromQuery,
  parseFilters,
} from '../dead-letters/dead-letter-filters.js';
import { createDeadLetterService } from '../dead-letters/dead-letter-service.js';
import type { RedriveOutcome } from '../dead-letters/redrive.js';
import { DEAD_LETTER_REASONS } from '../dead-letters/dead-letter-headers.js';
import { AppError } from '../errors.js';
import { commandContracts } from '../contracts/command-contracts.js';
import { errorHandler, notFound } from '../http/error-envelope.js';
import { requestId } from '../http/request-id.js';
import { createSharedProducer, type SharedProducer } from '../kafka/shared-producer.js';
import type { Logger } from '../logger.js';
import { SESSION_COOKIE, createOpsAuth, identityOf, readCookie } from './ops-auth.js';
import { createOidcRouter, type OidcSettings } from './oidc-router.js';
import { OPS_API_ROUTES, roleAllows } from './ops-roles.js';
import { createOpsTokenRouter } from './ops-token-router.js';
import { createConsoleVendorRouter, createInsightRouter } from './insight-router.js';
import { createStorageRouter } from '../retention/storage-router.js';
import { createReconcileOpsRouter } from './reconcile-ops-router.js';
import { createErasureOpsRouter } from './erasure-ops-router.js';
import { defaultTopicSettings, type TopicSettings } from '../kafka/topic-settings.js';
import { createRevealRouter, maskPersonalAnswers, searchIsReveal } from './reveal-router.js';
import { rentbridgeVersion } from '../version.js';

export interface OpsRouterOptions {
  db: Db;
  /** A connected producer to redrive with (tests); else `sharedProducer`, else one made from `kafka`. */
  producer?: Producer;
  /** The process's one producer (src/app/composition-root.ts), connected on first use. */
  sharedProducer?: SharedProducer;
  /** Without a producer given: the router makes its own with createSharedProducer, on first redrive. */
  kafka?: Kafka;
  logger: Logger;
  /** OPS_TOKEN, the break-glass admin credential; unset: personal tokens and single sign-on only. */
  opsToken: string | undefined;
  /** Single sign-on of the console (OPS_OIDC_*, OPS_ROLE_MAP); unset: none (tokens only). */
  oidc?: OidcSettings;
  /** KAFKA_TOPIC_PREFIX. */
  topicPrefix: string;
  /** OUTBOX_RETENTION_HOURS and RELAY_STALL_SECONDS, for the console's views (createInsightRouter). */
  insight?: { retentionHours: number; relayStallSeconds: number };
  /** What each table keeps, for GET /storage (retentionText of the configuration). */
  retention?: Record<string, string>;
  /** What each topic keeps, for an erasure's receipt (topicSettingsFromConfig); unset: the defaults. */
  topics?: TopicSettings;
}

export type OpsRouter = Router & {
  /** Disconnects the producer the router made itself (none when one was given). */
  close(): Promise<void>;
};

/** The console's static files: beside this module in src/, or src/ops/console from dist/. */
function consoleDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'console'), join(here, '..', '..', '..', 'src', 'ops', 'console')];
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? candidates[0]!;
}

const idParam = z.coerce.number().int().positive();

function parseId(req: Request): number {
  const parsed = idParam.safeParse(req.params.id);
  if (!parsed.success)
    throw new AppError(400, 'invalid_request', 'the dead-letter id must be a positive integer');
  return parsed.data;
}

/** The audit's actor: the authenticated identity (createOpsAuth), never a header the caller sets. */
const actorOf = (res: Response): string => identityOf(res).actor;

/** The console sends the correction as text from a textarea; API clients may send JSON. */
function parseCorrection(raw: unknown): unknown {
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new AppError(422, 'invalid_correction', 'corrected_value is not valid JSON');
  }
}

const redriveBody = z.object({
  corrected_value: z.unknown().optional(),
  reason: z.string().max(2000).optional(),
  dry_run: z.boolean().optional(),
  force: z.boolean().optional(),
});
const bulkRedriveBody = z.object({
  ids: z.array(z.coerce.number().int().positive()).min(1).max(1000),
  reason: z.string().max(2000).optional(),
  dry_run: z.boolean().optional(),
});
const discardBody = z.object({ reason: z.string().max(2000).optional() });

/** A JSON object body, through the same parser (and the same 400) as the filters. */
function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
    throw new AppError(400, 'validation_error', 'the body must be a JSON object');
  }
  return parseFilters(schema, (body ?? {}) as Record<string, unknown>);
}

function statusOf(outcome: RedriveOutcome): number {
  switch (outcome.action) {
    case 'not_found':
      return 404;
    case 'invalid':
      return 422;
    case 'skip':
      return 409;
    default:
      return 200;
  }
}

/**
 * `/ops`: the ops API under `/api` (bearer OPS_TOKEN, JSON, errors in the Partner API's envelope)
 * and the web console (static files, no build step) at the root.
 */
export function createOpsRouter(options: OpsRouterOptions): OpsRouter {
  const { db, topicPrefix } = options;
  const logger = options.logger.child({ component: 'ops-api' });
  // The producer a redrive sends with: the one given, the process's, or one from the same factory.
  const own =
    options.producer || options.sharedProducer || !options.kafka ? null : createSharedProducer(options.kafka);
  const letters = createDeadLetterService({
    db,
    topicPrefix,
    logger,
    async producer() {
      if (options.producer) return options.producer;
      const shared = options.sharedProducer ?? own;
      if (!shared) throw new AppError(503, 'unavailable', 'no Kafka producer configured for redrive');
      return shared.get();
    },
  });

  const api = express.Router();
  api.use((req, res, next) => (req.id ? next() : requestId()(req, res, next)));
  // "Is anyone signed in?" asked with no credential at all is a question, not a refusal: the
  // console asks it on every load, and a 401 there would be an error in the browser's console.
  // A credential sent (a bearer, a session cookie, even an ended one) is judged as everywhere.
  api.get('/session', (req, res, next) => {
    if (req.header('authorization') || readCookie(req, SESSION_COOKIE)) return next();
    res.json({ signed_in: false });
  });
  api.use(createOpsAuth({ db, opsToken: options.opsToken, logger }));
  // A body the API cannot read is refused, never taken as "no options": a form-encoded
  // `{"dry_run":true}` (what `curl -d` sends) would otherwise redrive for real.
  api.use((req, _res, next) => {
    const length = Number(req.headers['content-length'] ?? 0);
    const hasBody = req.headers['transfer-encoding'] !== undefined || length > 0;
    if (req.method !== 'GET' && req.method !== 'HEAD' && hasBody && !req.is('application/json')) {
      throw new AppError(
        415,
        'unsupported_media_type',
        'the ops API reads JSON bodies only (Content-Type: application/json)',
      );
    }
    next();
  });
  api.use(express.json({ limit: '1mb' }));
  // Personal data: every answer masked; a search by a personal value is a reveal (decision 052).
  api.use(maskPersonalAnswers());
  api.use(searchIsReveal(db));

  // Who is signed in, with which role, what that role may do, and the session's anti-forgery token.
  api.get('/session', (_req, res) => {
    const me = identityOf(res);
    res.json({
      signed_in: true,
      kind: me.kind,
      name: me.name,
      actor: me.actor,
      role: me.role,
      ...(me.subject && { subject: me.subject }),
      ...(me.expiresAt && { expires_at: me.expiresAt }),
      ...(me.csrfToken && { csrf_token: me.csrfToken }),
      allowed: OPS_API_ROUTES.filter((r) => roleAllows(me.role, r.role)).map((r) => `${r.method} ${r.path}`),
      // The console's footer shows it: which release answers (docs/releasing.md).
      version: rentbridgeVersion(),
    });
  });

  // The values the console's filters offer, from the list of command types and the dead-letter
  // reasons: a new type or reason appears in the console without a change to its page.
  api.get('/filters', (_req, res) => {
    res.json({
      command_types: commandContracts().map((c) => c.kind),
      reasons: DEAD_LETTER_REASONS,
      topics: commandContracts().map((c) => c.topic),
    });
  });

  api.get('/dead-letters', async (req, res) => {
    res.json(await letters.list(filtersFromQuery(deadLetterFiltersSchema, req.query)));
  });

  api.get('/dead-letters/:id', async (req, res) => {
    const id = parseId(req);
    const detail = await letters.show(id);
    if (!detail) throw new AppError(404, 'not_found', `no dead letter ${id}`);
    res.json(detail);
  });

  // Before `/:id/redrive` so that "redrive" is never read as an id.
  api.post('/dead-letters/redrive', async (req, res) => {
    const body = parseBody(bulkRedriveBody, req.body);
    const outcomes = await letters.redriveMany(body.ids, {
      actor: actorOf(res),
      reason: body.reason ?? null,
      dryRun: body.dry_run,
    });
    res.json({ outcomes });
  });

  api.post('/dead-letters/:id/redrive', async (req, res) => {
    const id = parseId(req);
    const body = parseBody(redriveBody, req.body);
    const correction = parseCorrection(body.corrected_value);
    const result = await letters.redrive(id, {
      actor: actorOf(res),
      reason: body.reason ?? null,
      dryRun: body.dry_run,
      force: body.force,
      ...(correction !== undefined ? { correction } : {}),
    });
    const status = statusOf(result.outcome);
    if (status !== 200) {
      const code = { 404: 'not_found', 422: 'invalid_correction', 409: 'conflict' }[status] ?? 'api_error';
      throw new AppError(status, code, result.outcome.message, { extra: { outcome: result.outcome } });
    }
    res.json(result);
  });

  api.post('/dead-letters/:id/discard', async (req, res) => {
    const id = parseId(req);
    const body = parseBody(discardBody, req.body);
    const result = await letters.discard(id, { actor: actorOf(res), reason: body.reason ?? '' });
    if (result.outcome.action === 'not_found') throw new AppError(404, 'not_found', result.outcome.message);
    if (result.outcome.action === 'skip') throw new AppError(409, 'conflict', result.outcome.message);
    res.json(result);
  });

  api.get('/audit', async (req, res) => {
    res.json({ items: await letters.audit(filtersFromQuery(auditFiltersSchema, req.query)) });
  });

  api.use(createInsightRouter({ db, topicPrefix, ...options.insight }));
  // One item unmasked, with a reason, audited (operator and admin).
  api.use(
    createRevealRouter({
      db,
      letters,
      topicPrefix,
      ...(options.insight && { retentionHours: options.insight.retentionHours }),
    }),
  );
  // Each table's size, retention and last pruning (src/retention/, docs/retention.md).
  api.use(createStorageRouter({ db, retention: options.retention ?? {} }));
  // Outcome callbacks: endpoints, queues, dead deliveries and their redelivery (src/callbacks/).
  // Reconciliation runs and their items (src/reconcile/, docs/reconciliation.md).
  api.use(createReconcileOpsRouter({ db }));
  api.use(createCallbackOpsRouter({ db, actorOf }));
  // Personal tokens (admin): src/ops/ops-token-router.ts.
  api.use(createOpsTokenRouter({ db }));
  // Erasure of one person on request (admin): src/erasure/, docs/privacy.md.
  api.use(createErasureOpsRouter({ db, topics: options.topics ?? defaultTopicSettings(1) }));
  api.use(notFound());
  api.use(errorHandler(logger));

  const router = express.Router() as OpsRouter;
  router.use('/api', api);
  // Relative asset and API URLs in the console need the trailing slash: /ops → /ops/.
  // Built from the mount path alone, never from the request line: an absolute-form request
  // (`GET http://other.example/ops`) must not redirect to another host.
  router.get('/', (req, res, next) => {
    const [path, query] = req.originalUrl.split('?');
    if (path && !path.endsWith('/')) {
      res.redirect(301, `${req.baseUrl}/${query ? `?${query}` : ''}`);
      return;
    }
    next();
  });
  router.use((_req, res, next) => {
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  });
  router.use('/vendor', createConsoleVendorRouter());
  // Single sign-on: /ops/auth/login, /callback, /logout, /methods (src/ops/oidc-router.ts).
  router.use('/auth', createOidcRouter({ db, logger, ...(options.oidc && { oidc: options.oidc }) }));
  // A browser asks for favicon.ico whatever the page names: the console's one icon, as SVG.
  router.get('/favicon.ico', (_req, res) => {
    res.type('image/svg+xml').sendFile(join(consoleDir(), 'favicon.svg'));
  });
  router.use(express.static(consoleDir(), { index: 'index.html', fallthrough: true }));
  router.close = async () => {
    await own?.close();
  };
  return router;
}
