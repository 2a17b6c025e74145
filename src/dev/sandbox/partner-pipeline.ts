import { createHash, randomUUID } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from '../../logger.js';
import type { Fault } from './faults.js';
import { listRoutes } from './list-routes.js';
import type { Route, RouteResult } from './route.js';
import { envelope, SandboxError, STATUS_OF_CODE } from './sandbox-error.js';
import type { SandboxState } from './sandbox-state.js';
import { writeRoutes } from './write-routes.js';

/** The two path prefixes of the Partner API (spec 4.2 uses `/v1/partners/` for customer create). */
const PREFIXES = ['/partner/v1/', '/v1/partners/'];

interface Match {
  route: Route;
  params: Record<string, string>;
}

/** A path segment decoded; a malformed escape stays as sent (it then names no record: 404). */
function decodeSegment(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

class RouteTable {
  private readonly entries: Array<{ route: Route; segments: string[] }>;

  constructor(routes: Route[]) {
    this.entries = routes.map((route) => ({ route, segments: route.path.split('/') }));
  }

  /** The route for method + path; `allowed` lists the methods of a path that exists for others. */
  match(method: string, path: string): { match?: Match; allowed: string[] } {
    const got = path.split('/');
    const allowed: string[] = [];
    // Literal segments win over parameters (`applications/activity_logs` before `{id}`).
    const candidates = this.entries
      .map(({ route, segments }) => {
        if (segments.length !== got.length) return undefined;
        const params: Record<string, string> = {};
        let literals = 0;
        for (const [i, segment] of segments.entries()) {
          const value = got[i] ?? '';
          if (segment.startsWith('{')) params[segment.slice(1, -1)] = decodeSegment(value);
          else if (segment === value) literals++;
          else return undefined;
        }
        return { route, params, literals };
      })
      .filter((c) => c !== undefined);
    const best = Math.max(-1, ...candidates.map((c) => c.literals));
    for (const c of candidates) {
      if (c.literals !== best) continue;
      if (c.route.method === method) return { match: { route: c.route, params: c.params }, allowed };
      allowed.push(c.route.method);
    }
    return { allowed };
  }
}

function errorId(): string {
  return `err_${randomUUID()}`;
}

/** The response a fault answers with: its status and code, and the fields that code carries. */
function faultError(fault: Fault): SandboxError {
  const code = fault.code ?? undefined;
  const status = fault.status ?? (code ? STATUS_OF_CODE[code] : 400) ?? 500;
  const extra: Record<string, unknown> = {};
  const headers: Record<string, string> = {};
  if (code === 'api_error') Object.assign(extra, { error_id: errorId(), error_signature: fault.signature });
  if (code === 'validation_error') extra.errors = ['injected fault'];
  if (code === 'processor_card_error')
    Object.assign(extra, { processor_code: 'card_declined', processor_decline_code: 'generic_decline' });
  if (code === 'rate_limited') {
    Object.assign(headers, {
      'Retry-After': '1',
      'X-RateLimit-Limit': '0',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(Math.ceil(Date.now() / 1000) + 1),
    });
  }
  const { message, ...fields } = fault.envelope ?? {};
  Object.assign(extra, fields);
  const text = typeof message === 'string' ? message : `injected fault (${fault.kind})`;
  return new SandboxError(status, code, text, { extra, headers });
}

function sendError(res: Response, requestId: string, error: SandboxError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json(envelope(requestId, error));
}

function parseBody(req: Request): unknown {
  const raw: unknown = req.body;
  if (!Buffer.isBuffer(raw) || raw.length === 0) return {};
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch {
    throw new SandboxError(400, 'invalid_request_body', 'request body is not valid JSON');
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Spec 8: a rolling window per source IP; issue_access_token has its own. Throws the 429. */
function rateLimit(state: SandboxState, req: Request, res: Response, route: Route | undefined): void {
  const { config } = state;
  const limit =
    route?.bucket === 'issue_token' ? config.issue_token_rate_limit_per_minute : config.rate_limit_per_minute;
  if (limit === null) return;
  const ip = req.socket.remoteAddress ?? 'unknown';
  const decision = state.limiter.take(
    route?.bucket ?? 'default',
    ip,
    limit,
    config.rate_limit_window_seconds * 1000,
  );
  res.setHeader('X-RateLimit-Limit', String(decision.limit));
  res.setHeader('X-RateLimit-Remaining', String(decision.remaining));
  res.setHeader('X-RateLimit-Reset', String(decision.resetAt));
  if (!decision.allowed) {
    res.setHeader('Retry-After', String(decision.retryAfter));
    throw new SandboxError(429, 'rate_limited', 'too many requests: the rate limit was exceeded');
  }
}

/** The bearer token; enhanced security's X-Access-Token (spec 5.5); read-only keys never write. */
async function authenticate(state: SandboxState, req: Request, route: Route) {
  const key = await state.keys.verify(req.header('authorization'));
  // Spec 5.5: enhanced security mode asks for the access key again, in X-Access-Token.
  if (state.config.enhanced_security && req.header('x-access-token') !== key.access_key)
    throw new SandboxError(401, 'unauthenticated', 'X-Access-Token must carry the access key');
  if (route.write && key.read_only) throw new SandboxError(403, 'forbidden', 'this key is read-only');
  return key;
}

/**
 * The platform's processing bound (spec 7.2, DESIGN.md's assumption): a request still unfinished
 * at max_processing_ms is abandoned, answered 503 and never applied; a shorter delay applies it
 * when the delay ends, whether or not the client still waits.
 */
async function delay(state: SandboxState, ms: number): Promise<void> {
  const bound = state.config.max_processing_ms;
  if (ms >= bound) {
    await sleep(bound);
    throw new SandboxError(503, 'request_timeout', 'processing time exceeded');
  }
  await sleep(ms);
}

/** A handler's own SandboxError, or a 500 api_error (with an id and signature) for a bug. */
function asSandboxError(thrown: unknown, logger: Logger, requestId: string, path: string): SandboxError {
  if (thrown instanceof SandboxError) return thrown;
  logger.error({ err: thrown, requestId, path }, 'sandbox handler failed');
  const signature = createHash('sha256')
    .update(String((thrown as Error)?.message))
    .digest('hex')
    .slice(0, 24);
  return new SandboxError(500, 'api_error', 'internal error', {
    extra: { error_id: errorId(), error_signature: `sig_${signature}` },
  });
}

/**
 * The Partner API of the sandbox: one pipeline for every endpoint, so that rate limits,
 * authentication, faults and the ledger treat all of them alike. Order: route (404/405) →
 * rate limit (429, not applied) → body (400) → token (401/403) → fault → handler.
 */
export function partnerPipeline(state: SandboxState, logger: Logger, hanging: Set<Response>): RequestHandler {
  const table = new RouteTable([...listRoutes(), ...writeRoutes()]);

  return async (req, res) => {
    const requestId = req.id;
    const path = req.path;
    res.on('finish', () =>
      logger.debug({ method: req.method, path, status: res.statusCode, requestId }, 'sandbox request'),
    );
    if (!PREFIXES.some((prefix) => path.startsWith(prefix))) {
      sendError(res, requestId, new SandboxError(404, 'not_found', `no route for ${req.method} ${path}`));
      return;
    }
    const { match, allowed } = table.match(req.method, path);
    const route = match?.route;
    // The ledger keeps what was sent: the raw text until it parses as JSON.
    let body: unknown =
      Buffer.isBuffer(req.body) && req.body.length > 0 ? req.body.toString('utf8') : undefined;
    const ledger = (applied: boolean, status: number | null) => {
      if (route?.ledger)
        state.ledger.record({ method: req.method, path, request_id: requestId, body, applied, status });
    };

    try {
      rateLimit(state, req, res, route);
      if (!match || !route) {
        if (allowed.length > 0) {
          res.setHeader('Allow', allowed.join(', '));
          throw new SandboxError(405, 'method_not_allowed', `${req.method} is not allowed on ${path}`);
        }
        throw new SandboxError(404, 'not_found', `no route for ${req.method} ${path}`);
      }
      if (req.method !== 'GET') body = parseBody(req);

      const key = route.auth ? await authenticate(state, req, route) : undefined;

      const fault = state.faults.take(req.method, path);
      if (fault?.kind === 'delay') await delay(state, fault.delay_ms);
      if (fault?.kind === 'error') throw faultError(fault);

      const result: RouteResult = await route.handle({
        state,
        params: match.params,
        query: req.query as Record<string, unknown>,
        body,
        key,
        requestId,
      });
      const applied = result.status < 300;

      if (fault?.kind === 'apply_then_error') {
        const error = faultError(fault);
        ledger(applied, error.status);
        sendError(res, requestId, error);
        return;
      }
      if (fault?.kind === 'apply_then_timeout') {
        // The write is done; the answer never comes, until the client gives up or we close.
        ledger(applied, null);
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      ledger(applied, result.status);
      res.status(result.status).json(result.body);
    } catch (thrown) {
      const error = asSandboxError(thrown, logger, requestId, path);
      ledger(false, error.status);
      sendError(res, requestId, error);
    }
  };
}
