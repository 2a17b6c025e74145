import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import type { Config } from '../config/config.js';
import type { Db } from '../db/prisma.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { exposeMetrics, metrics } from '../metrics.js';
import { createPartnerClient, type PartnerClient } from '../partner/partner-client.js';
import { createRateBudget } from '../partner/rate-budget.js';
import type { RateBudget } from '../partner/rate-budget-types.js';
import { pauseEnd } from '../partner/throttle.js';
import { createSourcePartners, sourceKeys, type KeyUse } from '../partner/source-partners.js';
import { claimReceipt, releaseReceipt } from '../receiver/receipt-repository.js';
import { createVerifier, type Verifier } from '../receiver/signature.js';

/**
 * `POST /pms/:source/customer-access-tokens` (mounted at /pms): a property-management system asks,
 * synchronously, for a customer-level token for the platform's SDK (spec 4.2
 * `issue_access_token`). Authenticated like the PMS's webhooks: a Standard Webhooks signature with
 * one of the source's PMS_WEBHOOK_SECRETS over the raw body, which names the customer, so a
 * signature is good for that customer only (and for WEBHOOK_TOLERANCE_SECONDS).
 *
 * The endpoint has its own limit (spec 8: 2,500/min per IP) and its own budget, shared through
 * PostgreSQL by every process on the IP (`issue_access_token` budget, not the 650/min one the
 * writes depend on): a 429 from the API pauses every process until Retry-After, and while paused
 * or full the caller gets our own 429 with Retry-After rather than a request the API would refuse.
 *
 * A signed request works once (issue 34): its `webhook-id` is claimed for the source in
 * webhook_receipts (PostgreSQL, so every receiver process sees it) before the Partner API is asked;
 * the same request again, within the whole tolerance window, is `409 conflict`. A request that did
 * not get a token (throttled, refused, the API away) gives its claim back, so the caller may send
 * the same signed request again. The token is asked for with the source's own Partner API key when
 * it has one (PMS_PARTNER_KEYS): a scoped key answers `404` for customers outside its scope.
 */

/** The budget's name in PostgreSQL: one per egress IP and limit scope (spec 8). */
export const TOKEN_BUDGET_NAME = 'issue-access-token';

/** The receipts' source of a PMS source's token requests: apart from its webhooks' (`pms:<source>`). */
export const tokenReceiptSource = (source: string) => `pms-token:${source}`;
const TOKEN_RECEIPT_TYPE = 'customer.access_token_requested';

/** One signed request's claim on its `webhook-id` (webhook_receipts). */
export interface RequestClaims {
  /** True when the id was not used before by the source. */
  claim(source: string, webhookId: string): Promise<boolean>;
  release(source: string, webhookId: string): Promise<void>;
}

export interface IssuedToken {
  data: Record<string, unknown>;
  requestId: string;
}

export interface CustomerTokenRouterDeps {
  /** PMS_WEBHOOK_SECRETS: source → secrets (several during rotation). */
  secrets: Record<string, readonly string[]>;
  toleranceSeconds: number;
  /** Calls `POST /partner/v1/customers/{id}/issue_access_token` through the token budget. */
  issue(
    customerId: string,
    options: { requestId: string; signal: AbortSignal; source: string },
  ): Promise<IssuedToken>;
  /** Which Partner API key acts for a source (only to word a refusal). Default: the deployment's. */
  keyOf?(source: string): KeyUse;
  /** The dedupe of signed requests by `webhook-id`. */
  claims: RequestClaims;
  /** The token budget (for Retry-After when it is paused). */
  budget?: Pick<RateBudget, 'snapshot'>;
  logger: Logger;
  /** Longest wait for a budget slot and the API's answer. Default 10 000 ms. */
  waitMs?: number;
}

const tokenRequestSchema = z
  .object({
    customer_id: z
      .union([
        z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, '1 to 64 letters, digits, "_" or "-"'),
        z.number().int(),
      ])
      .transform(String),
  })
  .strict();

function throttled(retryAfterSeconds: number, res: Response): AppError {
  res.setHeader('Retry-After', String(Math.max(1, Math.ceil(retryAfterSeconds))));
  return new AppError(
    429,
    'rate_limited',
    'too many customer token requests; retry after Retry-After seconds',
    {
      retriable: true,
    },
  );
}

export function createCustomerTokenRouter(deps: CustomerTokenRouterDeps): Router {
  const logger = deps.logger.child({ component: 'customer-tokens' });
  const waitMs = deps.waitMs ?? 10_000;
  // Its result label is an HTTP status (an open set): series appear as they come, none seeded.
  exposeMetrics('customerTokens');
  const verifiers = new Map<string, Verifier>(
    Object.entries(deps.secrets).map(([source, secrets]) => [
      source,
      createVerifier(secrets, deps.toleranceSeconds),
    ]),
  );
  const router = express.Router();
  const raw = express.raw({ type: () => true, limit: 4096 });

  router.post('/:source/customer-access-tokens', raw, async (req: Request, res: Response) => {
    const source = String(req.params.source);
    const verifier = verifiers.get(source);
    // Unknown sources share one label: a caller must not be able to grow the metric's series.
    const label = verifier ? source : 'unknown';
    try {
      await issueFor(req, res, source, verifier);
      metrics.customerTokens.inc({ source: label, result: 'issued' });
    } catch (error) {
      const status = error instanceof AppError ? error.status : 500;
      metrics.customerTokens.inc({ source: label, result: String(status) });
      throw error;
    }
  });

  async function issueFor(req: Request, res: Response, source: string, verifier: Verifier | undefined) {
    if (!verifier) throw new AppError(401, 'unauthenticated', 'unknown PMS source');
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const { webhookId } = verifier(body, req.headers);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw new AppError(400, 'invalid_request_body', 'request body is not valid JSON');
    }
    const input = tokenRequestSchema.safeParse(parsed);
    if (!input.success) {
      throw new AppError(422, 'validation_error', 'the request body does not match its schema', {
        extra: { errors: input.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`) },
      });
    }
    const customerId = input.data.customer_id;
    const log = { source, customerId, webhookId, requestId: req.id };
    let fresh: boolean;
    try {
      fresh = await deps.claims.claim(source, webhookId);
    } catch (error) {
      res.setHeader('Retry-After', '5');
      throw new AppError(503, 'service_unavailable', 'the request could not be recorded; retry later', {
        retriable: true,
        cause: error,
      });
    }
    if (!fresh) {
      logger.warn(log, 'customer token request replayed: refused');
      throw new AppError(
        409,
        'replayed_request',
        'this signed request was already used (its webhook-id); sign a new request with a new webhook-id',
      );
    }
    let issued = false;
    try {
      await issueClaimed(res, source, customerId, log);
      issued = true;
    } finally {
      // Nothing was minted for the caller: the same signed request may be sent again.
      if (!issued) await deps.claims.release(source, webhookId).catch(() => undefined);
    }
  }

  async function issueClaimed(
    res: Response,
    source: string,
    customerId: string,
    log: Record<string, unknown>,
  ): Promise<void> {
    const requestId = String(log.requestId);
    // Paused by a 429 (this process or another on the IP): say so at once rather than hold the
    // caller until the wait runs out.
    const paused = (await deps.budget?.snapshot().catch(() => null))?.pausedUntil;
    if (paused && paused.getTime() > Date.now()) throw throttled((paused.getTime() - Date.now()) / 1000, res);
    try {
      const issued = await deps.issue(customerId, {
        requestId,
        signal: AbortSignal.timeout(waitMs),
        source,
      });
      const token = issued.data.token;
      if (typeof token !== 'string' || token === '') {
        throw new AppError(502, 'bad_gateway', 'the Partner API answered without a token');
      }
      logger.info({ ...log, partnerRequestId: issued.requestId }, 'customer token issued');
      res.setHeader('Cache-Control', 'no-store');
      res.status(200).json({
        customer_id: customerId,
        token,
        ...(typeof issued.data.expires_in === 'number' && { expires_in: issued.data.expires_in }),
      });
    } catch (error) {
      if (error instanceof AppError) throw error;
      const e = error as {
        status?: number;
        code?: string;
        retryAfterSeconds?: number;
        rateLimitReset?: Date;
        name?: string;
      };
      // The pause the one handler of a 429 wrote into the budget (src/partner/throttle.ts).
      if (e.status === 429) throw throttled((pauseEnd(e).getTime() - Date.now()) / 1000, res);
      if (e.name === 'TimeoutError' || e.name === 'AbortError') {
        // No slot in time: the budget is paused by a 429 (any process) or its window is full.
        const paused = (await deps.budget?.snapshot().catch(() => null))?.pausedUntil;
        throw throttled(paused ? (paused.getTime() - Date.now()) / 1000 : 1, res);
      }
      const own = deps.keyOf?.(source) === 'own';
      if (e.status === 404)
        throw new AppError(
          404,
          'not_found',
          own ? "no such customer within the scope of this source's Partner API key" : 'no such customer',
        );
      // A read-only key (spec 5.8) may not issue tokens: a write.
      if (e.status === 403 && own)
        throw new AppError(403, 'forbidden', "this source's Partner API key may not issue customer tokens");
      logger.warn({ ...log, status: e.status ?? null, code: e.code ?? null }, 'customer token not issued');
      throw new AppError(502, 'bad_gateway', 'the Partner API did not issue the token', { cause: error });
    }
  }
  return router;
}

/**
 * The router with its own Partner API client and budget (`issue-access-token`, shared through
 * PostgreSQL). The client's authenticate calls (one per API-token lifetime) take slots of this
 * budget too.
 */
export function createCustomerTokens(options: {
  db: Db;
  partnerUrl: string;
  config: Pick<
    Config,
    | 'PARTNER_ACCESS_KEY'
    | 'PARTNER_SECRET_KEY'
    | 'PARTNER_ENHANCED_SECURITY'
    | 'PARTNER_TIMEOUT_MS'
    | 'PARTNER_TOKEN_RATE_LIMIT_PER_MINUTE'
    | 'PMS_WEBHOOK_SECRETS'
    | 'PMS_PARTNER_KEYS'
    | 'WEBHOOK_TOLERANCE_SECONDS'
  >;
  logger: Logger;
  fetch?: typeof fetch;
  waitMs?: number;
}): { router: Router; close(): Promise<void> } {
  const { config, logger } = options;
  const budget = createRateBudget({
    db: options.db,
    name: TOKEN_BUDGET_NAME,
    limitPerMinute: config.PARTNER_TOKEN_RATE_LIMIT_PER_MINUTE,
    logger,
  });
  // Every key's client on the one token budget: the limit is per egress IP (spec 8), not per key.
  const clientFor = (accessKey: string, secretKey: string) =>
    createPartnerClient({
      baseUrl: options.partnerUrl,
      accessKey,
      secretKey,
      enhancedSecurity: config.PARTNER_ENHANCED_SECURITY,
      timeoutMs: config.PARTNER_TIMEOUT_MS,
      budget,
      logger,
      ...(options.fetch && { fetch: options.fetch }),
    });
  let deployment: PartnerClient | undefined;
  const partners = createSourcePartners<PartnerClient>({
    deployment: () => (deployment ??= clientFor(config.PARTNER_ACCESS_KEY, config.PARTNER_SECRET_KEY)),
    keys: sourceKeys(config),
    build: (_source, key) => clientFor(key.accessKey, key.secretKey),
  });
  const router = createCustomerTokenRouter({
    secrets: config.PMS_WEBHOOK_SECRETS,
    toleranceSeconds: config.WEBHOOK_TOLERANCE_SECONDS,
    budget,
    logger,
    ...(options.waitMs !== undefined && { waitMs: options.waitMs }),
    keyOf: (source) => partners.keyOf(source),
    claims: {
      claim: (source, webhookId) =>
        claimReceipt(options.db, {
          source: tokenReceiptSource(source),
          webhookId,
          eventType: TOKEN_RECEIPT_TYPE,
        }),
      release: (source, webhookId) => releaseReceipt(options.db, tokenReceiptSource(source), webhookId),
    },
    issue: async (customerId, { source, ...call }) => {
      const res = await partners.forSource(source).partner.issueCustomerAccessToken(customerId, call);
      return { data: res.data, requestId: res.requestId };
    },
  });
  return { router, close: async () => budget.close?.() };
}
