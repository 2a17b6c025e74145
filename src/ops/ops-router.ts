import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Request, type Router } from 'express';
import type { Kafka, Producer } from 'kafkajs';
import { PRODUCER_CONFIG, type SharedProducer } from '../kafka/shared-producer.js';
import { z } from 'zod';
import { createCallbackOpsRouter } from '../callbacks/callback-ops-router.js';
import type { Db } from '../db/prisma.js';
import { deadLetterTarget, listAudit } from '../dead-letters/audit-repository.js';
import {
  auditFiltersSchema,
  deadLetterFiltersSchema,
  describeIssues,
} from '../dead-letters/dead-letter-filters.js';
import {
  countDeadLetters,
  getDeadLetter,
  searchDeadLetters,
} from '../dead-letters/dead-letter-repository.js';
import {
  discardDeadLetter,
  letterGuardState,
  redriveDeadLetter,
  type RedriveOutcome,
} from '../dead-letters/redrive.js';
import { AppError } from '../errors.js';
import { errorHandler, notFound } from '../http/error-envelope.js';
import { requestId } from '../http/request-id.js';
import type { Logger } from '../logger.js';
import { requireOpsToken } from './ops-auth.js';
import { createConsoleVendorRouter, createInsightRouter } from './insight-router.js';

export interface OpsRouterOptions {
  db: Db;
  /** A connected producer to redrive with; or `kafka`, from which one is made on first use. */
  producer?: Producer;
  /** The process's one producer (src/app/composition-root.ts), connected on first use. */
  sharedProducer?: SharedProducer;
  kafka?: Kafka;
  logger: Logger;
  /** OPS_TOKEN; unset: every API call answers 401. */
  opsToken: string | undefined;
  /** KAFKA_TOPIC_PREFIX. */
  topicPrefix: string;
  /** OUTBOX_RETENTION_HOURS and RELAY_STALL_SECONDS, for the console's views (createInsightRouter). */
  insight?: { retentionHours: number; relayStallSeconds: number };
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

function actorOf(req: Request): string {
  const actor = req.header('x-ops-actor')?.trim();
  return actor ? actor.slice(0, 200) : 'ops-api';
}

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

function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
    throw new AppError(400, 'validation_error', 'the body must be a JSON object');
  }
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw new AppError(400, 'validation_error', describeIssues(parsed.error));
  return parsed.data;
}

/**
 * One parser for every list's query string: `snake_case` names to the schema's `camelCase`
 * fields, empty values dropped, and anything the schema refuses (NUL, far dates, a repeated
 * name) a 400 in the envelope.
 */
function parseQuery<T>(schema: z.ZodType<T>, req: Request): T {
  const input: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(req.query)) {
    if (value === '' || value === undefined) continue;
    input[name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())] = value;
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new AppError(400, 'validation_error', describeIssues(parsed.error));
  return parsed.data;
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
  let ownProducer: Producer | undefined;
  let connecting: Promise<Producer> | undefined;

  async function producer(): Promise<Producer> {
    if (options.producer) return options.producer;
    if (options.sharedProducer) return options.sharedProducer.get();
    if (!options.kafka) throw new AppError(503, 'unavailable', 'no Kafka producer configured for redrive');
    connecting ??= (async () => {
      ownProducer = options.kafka!.producer({ ...PRODUCER_CONFIG });
      await ownProducer.connect();
      return ownProducer;
    })();
    return connecting;
  }

  const api = express.Router();
  api.use((req, res, next) => (req.id ? next() : requestId()(req, res, next)));
  api.use(requireOpsToken(options.opsToken));
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

  api.get('/dead-letters', async (req, res) => {
    const filters = parseQuery(deadLetterFiltersSchema, req);
    const [items, counts] = await Promise.all([
      searchDeadLetters(db, filters, topicPrefix),
      countDeadLetters(db, filters, topicPrefix),
    ]);
    res.json({ items, counts });
  });

  api.get('/dead-letters/:id', async (req, res) => {
    const id = parseId(req);
    const letter = await getDeadLetter(db, id);
    if (!letter) throw new AppError(404, 'not_found', `no dead letter ${id}`);
    const guard = await letterGuardState(db, letter, topicPrefix);
    const audit = await listAudit(db, { target: deadLetterTarget(id) });
    res.json({ letter, guard, audit });
  });

  // Before `/:id/redrive` so that "redrive" is never read as an id.
  api.post('/dead-letters/redrive', async (req, res) => {
    const body = parseBody(bulkRedriveBody, req.body);
    const deps = { db, producer: await producer(), topicPrefix, logger };
    const outcomes: RedriveOutcome[] = [];
    for (const id of body.ids) {
      outcomes.push(
        await redriveDeadLetter(deps, id, {
          actor: actorOf(req),
          reason: body.reason ?? null,
          dryRun: body.dry_run,
        }),
      );
    }
    res.json({ outcomes });
  });

  api.post('/dead-letters/:id/redrive', async (req, res) => {
    const id = parseId(req);
    const body = parseBody(redriveBody, req.body);
    const correction = parseCorrection(body.corrected_value);
    const outcome = await redriveDeadLetter({ db, producer: await producer(), topicPrefix, logger }, id, {
      actor: actorOf(req),
      reason: body.reason ?? null,
      dryRun: body.dry_run,
      force: body.force,
      ...(correction !== undefined ? { correction } : {}),
    });
    const status = statusOf(outcome);
    if (status !== 200) {
      const code = { 404: 'not_found', 422: 'invalid_correction', 409: 'conflict' }[status] ?? 'api_error';
      throw new AppError(status, code, outcome.message, { extra: { outcome } });
    }
    res.json({ outcome, letter: await getDeadLetter(db, id) });
  });

  api.post('/dead-letters/:id/discard', async (req, res) => {
    const id = parseId(req);
    const body = parseBody(discardBody, req.body);
    const outcome = await discardDeadLetter({ db }, id, { actor: actorOf(req), reason: body.reason ?? '' });
    if (outcome.action === 'not_found') throw new AppError(404, 'not_found', outcome.message);
    if (outcome.action === 'skip') throw new AppError(409, 'conflict', outcome.message);
    res.json({ outcome, letter: await getDeadLetter(db, id) });
  });

  api.get('/audit', async (req, res) => {
    res.json({ items: await listAudit(db, parseQuery(auditFiltersSchema, req)) });
  });

  api.use(createInsightRouter({ db, topicPrefix, ...options.insight }));
  // Outcome callbacks: endpoints, queues, dead deliveries and their redelivery (src/callbacks/).
  api.use(createCallbackOpsRouter({ db }));
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
  router.use(express.static(consoleDir(), { index: 'index.html', fallthrough: true }));
  router.close = async () => {
    await ownProducer?.disconnect();
  };
  return router;
}
