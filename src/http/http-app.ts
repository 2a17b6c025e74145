import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type RequestHandler, type Router } from 'express';
import type { Logger } from '../logger.js';
import { registry } from '../metrics.js';
import { errorHandler, notFound, sendError } from './error-envelope.js';
import { requestId } from './request-id.js';

/**
 * The one express app of a process: request ids, the components' routers, /metrics, /healthz,
 * /readyz, then 404 and the error envelope for everything else.
 */
export interface HttpAppOptions {
  logger: Logger;
  mounts: Array<{ path: string; router: Router }>;
  /** Readiness checks: `true` passes, `false` or a string (the reason) fails. Default: none (ready). */
  ready?: () => Promise<Record<string, boolean | string>>;
  /** What /readyz shows beside the checks (each role's state: publisher, passes, group, lag). Default: none. */
  readyDetails?: () => Promise<Record<string, unknown>>;
  /** METRICS_TOKEN: when set, /metrics wants `Authorization: Bearer <token>`. Default: open. */
  metricsToken?: string;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** Bearer METRICS_TOKEN on /metrics, compared in constant time; no token configured: open. */
function metricsAuth(token: string | undefined): RequestHandler {
  const expected = token ? sha256(token) : null;
  return (req, res, next) => {
    if (!expected) return next();
    const match = /^Bearer\s+(.+)$/i.exec(req.header('authorization') ?? '');
    if (!match?.[1]) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="rentbridge-metrics"');
      sendError(
        req,
        res,
        401,
        'unauthenticated',
        'missing bearer token (Authorization: Bearer <METRICS_TOKEN>)',
      );
      return;
    }
    if (!timingSafeEqual(sha256(match[1].trim()), expected)) {
      sendError(req, res, 403, 'forbidden', 'invalid metrics token');
      return;
    }
    next();
  };
}

export function createHttpApp(options: HttpAppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  // Nothing served here is cached (webhook answers, ops JSON, metrics): no SHA-1 of every body.
  app.set('etag', false);
  app.use(requestId());
  for (const mount of options.mounts) app.use(mount.path, mount.router);
  // A person who opens the bare address is sent to the console (a 404 envelope told them nothing).
  if (options.mounts.some((m) => m.path === '/ops')) app.get('/', (_req, res) => res.redirect(302, '/ops/'));

  app.get('/metrics', metricsAuth(options.metricsToken), async (_req, res) => {
    res.setHeader('Content-Type', registry.contentType);
    res.send(await registry.metrics());
  });
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    let checks: Record<string, boolean | string>;
    let details: Record<string, unknown> | undefined;
    try {
      [checks, details] = await Promise.all([options.ready?.() ?? {}, options.readyDetails?.()]);
    } catch (error) {
      checks = { ready: (error as Error).message || 'failed' };
    }
    // A string is a failure's reason; only `true` passes.
    const ok = Object.values(checks).every((v) => v === true);
    res
      .status(ok ? 200 : 503)
      .json({ status: ok ? 'ready' : 'not_ready', checks, ...(details && { roles: details }) });
  });

  app.use(notFound());
  app.use(errorHandler(options.logger));
  return app;
}
