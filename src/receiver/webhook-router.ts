import express, { type Request, type Response, type NextFunction, type Router } from 'express';
import type { Config } from '../config/config.js';
import { UNROUTED_TYPE } from '../contracts/unrouted.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { exposeMetrics, metrics, startAtZero } from '../metrics.js';
import { DEFAULT_MAX_BATCH_BYTES, messageBytes, toKafkaMessage } from '../outbox/outbox-message.js';
import type { IngestItem, IngestWriter } from './ingest-writer.js';
import { routePartnerEvent, routePmsEvent, unstorableText, type Delivery } from './route-event.js';
import { rememberRefusal } from './refusals.js';
import { createVerifier, type Verifier } from './signature.js';
import { createTypeLabeler, unroutedAnswer } from './unrouted-answer.js';
import { traceWebhook } from '../telemetry.js';

/**
 * `POST /webhooks/partner` and `POST /webhooks/pms/:source` (mounted at /webhooks). Order of
 * checks: webhooks in hand (503), body size (413), signature over the raw bytes (401), UTF-8 and
 * JSON (400), shape (422), the CloudEvent's size against what the relay may send (413); then the
 * receipt and the outbox row in one transaction, and the 202 after its commit (503 + Retry-After
 * when PostgreSQL does not answer within WEBHOOK_STORAGE_TIMEOUT_MS).
 */
export interface WebhookRouterDeps {
  config: Pick<
    Config,
    'PARTNER_WEBHOOK_SECRETS' | 'PMS_WEBHOOK_SECRETS' | 'WEBHOOK_MAX_BODY_BYTES' | 'WEBHOOK_TOLERANCE_SECONDS'
  > &
    Partial<Pick<Config, 'WEBHOOK_MAX_IN_FLIGHT' | 'RELAY_MAX_BATCH_BYTES'>>;
  writer: IngestWriter;
  logger: Logger;
}

type Route = (d: Delivery) => IngestItem;

/** Room left in a CloudEvent for everything but the webhook's own data (envelope, headers). */
const ENVELOPE_ALLOWANCE = 4096;

/** Bytes the item's CloudEvent will take in Kafka: exact for a message, bounded for a state change. */
function eventBytes(item: IngestItem): number {
  if (item.kind === 'message') {
    const m = item.message;
    return messageBytes(
      toKafkaMessage({
        eventId: m.eventId,
        key: m.key,
        type: m.type,
        source: m.source,
        subject: m.subject ?? null,
        data: m.data,
        headers: m.headers ?? {},
        createdAt: new Date(),
      }),
    );
  }
  return Buffer.byteLength(JSON.stringify(item.change.record)) + ENVELOPE_ALLOWANCE;
}

/**
 * A 2xx answer written directly: express's `res.json` looks up settings and headers that these
 * answers do not need (about 5 of the ~160 µs of CPU per webhook, bench/ingest.ts).
 */
function reply(res: Response, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * Why a webhook was refused, as its answer says it: which header is missing, that no signature
 * matched, which field failed and how (the schema's words: fields and expected types, never the
 * values sent). One line, bounded.
 */
function refusalReason(error: AppError): string {
  const errors = Array.isArray(error.extra.errors) ? (error.extra.errors as unknown[]).map(String) : [];
  const text = errors.length ? `${error.message}: ${errors.join('; ')}` : error.message;
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
}

/** The `result` label of rentbridge_webhooks_total for a known source. */
const WEBHOOK_RESULTS = [
  'accepted',
  'duplicate',
  'unrouted',
  'invalid',
  'unauthorized',
  'too_large',
  'conflict',
  'unavailable',
  'error',
] as const;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A signed body as JSON, decoded only after the signature held over the bytes as sent: JSON text
 * is UTF-8 (RFC 8259), and text PostgreSQL cannot store is refused while the sender can see why.
 */
function parseBody(body: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new AppError(400, 'invalid_request_body', 'request body is not valid UTF-8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new AppError(400, 'invalid_request_body', 'request body is not valid JSON');
  }
  const unstorable = unstorableText(parsed);
  if (unstorable.length > 0) {
    throw new AppError(422, 'validation_error', 'the webhook body holds text that cannot be stored', {
      extra: { errors: unstorable },
    });
  }
  return parsed;
}

export function createWebhookRouter(deps: WebhookRouterDeps): Router {
  const { config, writer } = deps;
  const logger = deps.logger.child({ component: 'receiver' });
  const tolerance = config.WEBHOOK_TOLERANCE_SECONDS;
  const maxInFlight = config.WEBHOOK_MAX_IN_FLIGHT ?? 256;
  const maxEventBytes = config.RELAY_MAX_BATCH_BYTES ?? DEFAULT_MAX_BATCH_BYTES;
  let holding = 0;
  const typeLabel = createTypeLabeler();
  const partnerVerifier = createVerifier(config.PARTNER_WEBHOOK_SECRETS, tolerance);
  const pmsVerifiers = new Map<string, Verifier>(
    Object.entries(config.PMS_WEBHOOK_SECRETS).map(([source, secrets]) => [
      source,
      createVerifier(secrets, tolerance),
    ]),
  );
  exposeMetrics('receiver');
  // Every result of every configured source from 0, so the first of a kind alerts (src/metrics.ts).
  startAtZero(metrics.webhooks, {
    source: ['partner', ...[...pmsVerifiers.keys()].map((name) => `pms:${name}`)],
    result: WEBHOOK_RESULTS,
  });
  startAtZero(metrics.webhooks, { source: ['unknown'], result: ['unauthorized', 'overloaded'] });

  const router = express.Router();
  // Raw bytes whatever the content type: the signature covers them exactly as sent.
  const raw = express.raw({ type: () => true, limit: config.WEBHOOK_MAX_BODY_BYTES });

  /** Kept (never drop a signed event), but said: a mistyped type must not pass in silence. */
  function replyUnrouted(
    res: Response,
    ids: { source: string; requestId: string; webhookId: string; eventId?: string | undefined },
    item: IngestItem,
  ): void {
    metrics.webhooksUnrouted.inc({ source: ids.source, type: typeLabel(ids.source, item.eventType) });
    logger.warn(
      { ...ids, eventType: item.eventType },
      'webhook of an unknown type: kept on inbound.unrouted, nothing consumes it',
    );
    reply(res, 202, unroutedAnswer(ids.source, ids.eventId));
  }

  /**
   * A command id already in PostgreSQL with other content: 409, never a 202 for what can only
   * become a dead letter (src/receiver/command-conflict.ts). The look-up failing is no answer:
   * the write that follows meets the same PostgreSQL, and the consumer still judges.
   */
  async function refuseConflict(item: IngestItem): Promise<void> {
    const earlier = await writer.conflictOf?.(item).catch(() => null);
    if (!earlier) return;
    throw new AppError(
      409,
      'conflicting_duplicate',
      `command ${JSON.stringify(earlier.commandId)} (${earlier.commandType}) of source ${JSON.stringify(earlier.source)} was received before with other content and is ${earlier.state}: send a change as a new command with its own id`,
      { extra: { command_id: earlier.commandId, command_state: earlier.state } },
    );
  }

  async function handle(
    req: Request,
    res: Response,
    source: string,
    path: string,
    verifier: Verifier | undefined,
    route: Route,
  ): Promise<void> {
    // Fields, not a child logger: a pino child per request costs more than the request's own work.
    const ids = { source, requestId: req.id };
    let webhookId: string | undefined;
    let result = 'invalid';
    try {
      if (!verifier) {
        result = 'unauthorized';
        throw new AppError(401, 'unauthenticated', 'unknown webhook source');
      }
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      let signed: { webhookId: string };
      try {
        signed = verifier(body, req.headers);
      } catch (error) {
        result = 'unauthorized';
        throw error;
      }
      webhookId = signed.webhookId;
      const parsed = parseBody(body);
      const item = route({ source, path, webhookId: signed.webhookId, requestId: req.id, body: parsed });
      // docs/decisions/014: an event Kafka would refuse is refused here, while the sender can see why.
      if (body.length + ENVELOPE_ALLOWANCE > maxEventBytes) {
        const bytes = eventBytes(item);
        if (bytes > maxEventBytes) {
          result = 'too_large';
          throw new AppError(
            413,
            'payload_too_large',
            `the event would be ${bytes} bytes, more than the ${maxEventBytes} bytes it may take in Kafka`,
          );
        }
      }
      await refuseConflict(item);
      let written: Awaited<ReturnType<IngestWriter['write']>>;
      try {
        written = await traceWebhook(item, () => writer.write(item));
      } catch (error) {
        // Storage is down (PostgreSQL restarting, say): nothing was acknowledged, so the sender
        // must retry; a 503 with Retry-After says so, where a 500 would read as our bug.
        result = 'unavailable';
        logger.error({ ...ids, webhookId, err: error }, 'webhook not stored: storage unavailable');
        // The time-out (WEBHOOK_STORAGE_TIMEOUT_MS) or a failure: a 503 either way, with Retry-After.
        res.setHeader('Retry-After', '5');
        throw new AppError(503, 'service_unavailable', 'the webhook could not be stored; retry later', {
          retriable: true,
          cause: error,
        });
      }
      if (written.duplicate) {
        result = 'duplicate';
        logger.info({ ...ids, webhookId }, 'duplicate webhook: nothing written');
        reply(res, 200, { accepted: true, duplicate: true });
        return;
      }
      result = item.kind === 'message' && item.message.type === UNROUTED_TYPE ? 'unrouted' : 'accepted';
      // Debug, not info: every accepted webhook is on record with all its ids (receipt, outbox
      // row, `rentbridge trace`) and counted; a line each cost ~12 of ~170 µs of CPU per webhook
      // (bench/ingest.ts). Refusals and duplicates, which nothing else records, stay at info.
      logger.debug(
        { ...ids, webhookId, eventId: written.eventId, eventType: item.eventType, result },
        'webhook accepted',
      );
      if (result === 'unrouted')
        return replyUnrouted(res, { ...ids, webhookId, eventId: written.eventId }, item);
      reply(res, 202, { accepted: true, ...(written.eventId ? { event_id: written.eventId } : {}) });
    } catch (error) {
      if (!(error instanceof AppError)) result = 'error';
      else {
        if (error.code === 'conflicting_duplicate') result = 'conflict';
        const reason = refusalReason(error);
        logger.info({ ...ids, webhookId, status: error.status, code: error.code, reason }, 'webhook refused');
        if (error.status < 500)
          rememberRefusal({
            requestId: req.id,
            source: verifier ? source : 'unknown',
            status: error.status,
            code: error.code,
            reason,
            at: new Date(),
          });
      }
      throw error;
    } finally {
      // Unknown sources share one label: a caller must not be able to grow the metric's series.
      metrics.webhooks.inc({ source: verifier ? source : 'unknown', result });
    }
  }

  /** Body-reading errors: 413 counted; a broken or unknown content-encoding is the sender's 400. */
  function bodyErrors(source: (req: Request) => string) {
    return (error: unknown, req: Request, _res: Response, next: NextFunction) => {
      const e = error as { type?: string; status?: number };
      if (e.type === 'entity.too.large') {
        metrics.webhooks.inc({ source: source(req), result: 'too_large' });
        next(error);
      } else if (
        !(error instanceof AppError) &&
        typeof e.status === 'number' &&
        e.status >= 400 &&
        e.status < 500
      ) {
        metrics.webhooks.inc({ source: source(req), result: 'invalid' });
        next(
          new AppError(400, 'invalid_request_body', 'request body could not be read (content-encoding?)', {
            cause: error,
          }),
        );
      } else {
        next(error);
      }
    };
  }

  /**
   * Bounds the webhooks held at once (their bodies in memory while PostgreSQL is slow): beyond
   * WEBHOOK_MAX_IN_FLIGHT, a 503 + Retry-After before the body is read.
   */
  function admit(req: Request, res: Response, next: NextFunction): void {
    if (holding >= maxInFlight) {
      metrics.webhooks.inc({ source: 'unknown', result: 'overloaded' });
      res.setHeader('Retry-After', '5');
      // The body is not read: the connection cannot be reused.
      res.setHeader('Connection', 'close');
      next(
        new AppError(503, 'service_unavailable', 'too many webhooks in hand; retry later', {
          retriable: true,
        }),
      );
      return;
    }
    holding += 1;
    // 'close' follows every response, answered or cut off (it comes after 'finish').
    res.once('close', () => {
      holding -= 1;
    });
    next();
  }

  router.use(admit);
  router.post(
    '/partner',
    raw,
    (req: Request, res: Response) =>
      handle(req, res, 'partner', '/webhooks/partner', partnerVerifier, routePartnerEvent),
    bodyErrors(() => 'partner'),
  );
  router.post(
    '/pms/:source',
    raw,
    (req: Request, res: Response) => {
      const name = String(req.params.source);
      return handle(req, res, `pms:${name}`, `/webhooks/pms/${name}`, pmsVerifiers.get(name), routePmsEvent);
    },
    bodyErrors((req) => {
      const name = String(req.params.source);
      return pmsVerifiers.has(name) ? `pms:${name}` : 'unknown';
    }),
  );
  return router;
}
