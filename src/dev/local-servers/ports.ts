import { connect, createServer } from 'node:net';

/** Whether something accepts a TCP connection on host:port within `timeoutMs`. */
export function answers(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * Whether this process could listen on `port` (on `host`, or every interface as the HTTP role
 * does): the listen is tried and closed at once, so a port held by anyone, on any address, reads
 * as busy.
 */
export function canListen(port: number, host?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, ...(host && { host }), exclusive: true }, () => server.close(() => resolve(true)));
  });
}
