import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandboxControl } from '../../src/dev/sandbox/control-client.js';

/**
 * The keep-alive race of the sandbox's control client: a request written to a pooled socket the
 * server has just closed fails with "other side closed" / ECONNRESET. Forced here the way it
 * happens: the server closes its idle keep-alive connections (its keep-alive timeout, a sandbox
 * closed and started again) just before the next call, while a socket to it sits in the pool
 * (left by the client itself, or by any other `fetch` to the same origin, e.g. the Partner API
 * client's). With `fetch` about half of such calls failed; each call now has its connection.
 */
describe('the sandbox control client', () => {
  let server: Server;
  let base: string;
  let connections = 0;
  const posted: unknown[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (req.method === 'POST') {
          const items = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown[];
          posted.push(...items);
          res.end(JSON.stringify({ items }));
        } else res.end(JSON.stringify({ faults: [] }));
      });
    });
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('never writes a call to a keep-alive socket the server has just closed', async () => {
    const control = createSandboxControl(base);
    const calls = 40;
    connections = 0;
    for (let i = 0; i < calls / 2; i++) {
      // Another client of the same origin leaves an idle socket in the shared pool.
      await (await fetch(`${base}/__sandbox/faults`)).text();
      await control.faults();
      server.closeIdleConnections();
      await expect(control.faults()).resolves.toEqual([]);
      server.closeIdleConnections();
    }
    // Each control call on a connection of its own (the fetches took one each as well).
    expect(connections).toBe(calls + calls / 2);
  });

  it('sends a POST once: records are added once, not again by a retry', async () => {
    const control = createSandboxControl(base);
    for (let i = 0; i < 10; i++) {
      await (await fetch(`${base}/__sandbox/faults`)).text();
      server.closeIdleConnections();
      await expect(control.addRecords('leads', [{ n: i }])).resolves.toEqual([{ n: i }]);
    }
    expect(posted).toEqual(Array.from({ length: 10 }, (_, n) => ({ n })));
  });
});
