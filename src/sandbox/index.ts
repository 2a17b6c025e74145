import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type ErrorRequestHandler, type Response } from 'express';
import { errorHandler } from '../http/error-envelope.js';
import { requestId } from '../http/request-id.js';
import { createLogger, type Logger } from '../logger.js';
import { controlApi } from './control-api.js';
import { partnerPipeline } from './partner-pipeline.js';
import { envelope, SandboxError } from './sandbox-error.js';
import { SandboxState } from './sandbox-state.js';
import { seedDemo } from './seed-demo.js';

export { DEFAULT_ACCESS_KEY, DEFAULT_SECRET_KEY } from './api-keys.js';
export { createSandboxControl } from './control-client.js';

export interface SandboxOptions {
  /** Port to listen on. Default 4010; 0 picks a free one. */
  port?: number;
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** Load a data set at start (`demo`: deterministic, a few thousand records). */
  seed?: 'demo';
  /** Default: a silent logger. */
  logger?: Logger;
}

export interface Sandbox {
  /** Base URL, e.g. `http://127.0.0.1:4010`. */
  url: string;
  port: number;
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
 * memory, needing no database, Kafka or configuration.
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const logger = (options.logger ?? createLogger({ level: 'silent' })).child({ component: 'sandbox' });
  const state = new SandboxState(logger);
  if (options.seed === 'demo') seedDemo(state.store);
  const hanging = new Set<Response>();

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(requestId());
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
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        state.webhooks.stop();
        for (const res of hanging) res.destroy();
        hanging.clear();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
