import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type ErrorRequestHandler, type Response } from 'express';
import { errorHandler } from '../../http/error-envelope.js';
import { requestId } from '../../http/request-id.js';
import { createLogger, type Logger } from '../../logger.js';
import { controlApi } from './control-api.js';
import { partnerPipeline } from './partner-pipeline.js';
import { envelope, SandboxError } from './sandbox-error.js';
import { SandboxState } from './sandbox-state.js';
import { seedDemo } from './seed-demo.js';
import { restoreSnapshot, SnapshotSaver, type SandboxPersistence } from './sandbox-snapshot.js';

export { DEFAULT_ACCESS_KEY, DEFAULT_SECRET_KEY } from './api-keys.js';
export { createSandboxControl } from './control-client.js';
export type { SandboxPersistence, SandboxSnapshot } from './sandbox-snapshot.js';

export interface SandboxOptions {
  /** Port to listen on. Default 4010; 0 picks a free one. */
  port?: number;
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** Load a data set at start (`demo`: deterministic, a few thousand records). */
  seed?: 'demo';
  /** Default: a silent logger. */
  logger?: Logger;
  /**
   * Where the sandbox keeps its state across restarts (`rentbridge start`): restored from it when
   * it holds one (no seed then), saved to it after changes and on close. Default: memory only.
   */
  persistence?: SandboxPersistence;
}

export interface Sandbox {
  /** Base URL, e.g. `http://127.0.0.1:4010`. */
  url: string;
  port: number;
  /** True when the state was restored from `persistence` (not seeded, not new). */
  restored: boolean;
  /** Stops listening, ends hanging (`apply_then_timeout`) connections and pending webhooks. */
  close(): Promise<void>;
}

/** Answers SandboxErrors (the control API's) in the envelope; leaves the rest to the shared handler. */
function sandboxErrors(): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (error instanceof SandboxError) {
      res.status(error.status).json(envelope(req.id, error));
      return;
    }
    next(error);
  };
}

/**
 * Starts the Partner API sandbox: the spec's endpoints plus the control API of DESIGN.md, in
 * memory, needing no database, Kafka or configuration (given `persistence`, its state is also
 * kept there across restarts).
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const logger = (options.logger ?? createLogger({ level: 'silent' })).child({ component: 'sandbox' });
  const state = new SandboxState(logger);
  const saved = options.persistence ? await options.persistence.load() : null;
  if (saved) restoreSnapshot(state, saved);
  else if (options.seed === 'demo') seedDemo(state.store);
  const saver =
    options.persistence &&
    new SnapshotSaver(state, options.persistence, saved?.seededAt ?? new Date().toISOString(), logger);
  // Seeded now: saved at once, so a second start restores rather than seeds again.
  await saver?.saveIfChanged();
  saver?.start();
  const hanging = new Set<Response>();

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(requestId());
  if (saver)
    app.use((req, res, next) => {
      // Any write may change what is kept (keys, settings, the ledger): saved at the next tick.
      if (req.method !== 'GET') {
        saver.touch();
        res.on('finish', () => saver.touch());
      }
      next();
    });
  app.use('/__sandbox', controlApi(state));
  // The Partner API reads its body as bytes, so that bad JSON is answered inside the pipeline
  // (after the rate limit, and recorded in the ledger).
  app.use(express.raw({ type: () => true, limit: '10mb' }));
  app.use(partnerPipeline(state, logger, hanging));
  app.use(sandboxErrors());
  app.use(errorHandler(logger));

  const host = options.host ?? '127.0.0.1';
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(options.port ?? 4010, host, (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    restored: saved != null,
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        state.webhooks.stop();
        for (const res of hanging) res.destroy();
        hanging.clear();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }).then(() => saver?.stop());
      return closing;
    },
  };
}
