import { createServer, type RequestListener, type Server } from 'node:http';
import type { Config } from '../config/config.js';

/**
 * The HTTP server's time-outs and connection cap, set deliberately (docs/configuration.md):
 * a sender that trickles its headers or its body holds a socket for HTTP_HEADERS_TIMEOUT_MS /
 * HTTP_REQUEST_TIMEOUT_MS at most (Node's own defaults are 60 s and 300 s), an idle keep-alive
 * connection HTTP_KEEP_ALIVE_TIMEOUT_MS, and beyond HTTP_MAX_CONNECTIONS new sockets are
 * closed at once. Node answers a time-out with 408 and closes the connection.
 */
export type ServerLimits = Pick<
  Config,
  | 'HTTP_HEADERS_TIMEOUT_MS'
  | 'HTTP_REQUEST_TIMEOUT_MS'
  | 'HTTP_KEEP_ALIVE_TIMEOUT_MS'
  | 'HTTP_MAX_CONNECTIONS'
>;

/** A server (not yet listening) for `app` with the limits set. */
export function createLimitedServer(app: RequestListener, limits: ServerLimits): Server {
  const requestTimeout = limits.HTTP_REQUEST_TIMEOUT_MS;
  // Node requires headersTimeout <= requestTimeout.
  const headersTimeout = Math.min(limits.HTTP_HEADERS_TIMEOUT_MS, requestTimeout);
  const server = createServer(
    {
      requestTimeout,
      headersTimeout,
      keepAliveTimeout: limits.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      // How often Node checks the two time-outs (default 30 s): a tenth of the shorter one.
      connectionsCheckingInterval: Math.max(250, Math.floor(headersTimeout / 10)),
    },
    app,
  );
  server.maxConnections = limits.HTTP_MAX_CONNECTIONS;
  return server;
}
