import express, { type Router } from 'express';
import type { Logger } from '../logger.js';
import { registry } from '../metrics.js';
import { errorHandler, notFound } from './error-envelope.js';
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
}

export function createHttpApp(options: HttpAppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.use(requestId());
  for (const mount of options.mounts) app.use(mount.path, mount.router);

  app.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', registry.contentType);
    res.send(await registry.metrics());
  });
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    let checks: Record<string, boolean | string>;
    try {
      checks = options.ready ? await options.ready() : {};
    } catch (error) {
      checks = { ready: (error as Error).message || 'failed' };
    }
    // A string is a failure's reason; only `true` passes.
    const ok = Object.values(checks).every((v) => v === true);
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not_ready', checks });
  });

  app.use(notFound());
  app.use(errorHandler(options.logger));
  return app;
}
