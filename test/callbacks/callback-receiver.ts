import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'svix';

/** One callback as a PMS receives it, and whether the `svix` library verified its signature. */
export interface Received {
  source: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The secrets (by index) whose signature `svix`'s Webhook.verify accepted. */
  verifiedWith: number[];
  at: number;
}

/** How the receiver answers a source's n-th request (0-based): a status, after an optional delay. */
export type Behaviour = (n: number) => { status: number; delayMs?: number; hold?: Promise<void> };

/**
 * A PMS's callback endpoint, written in the test: one path per source (`/<source>`), each answering
 * as its behaviour says, every request verified with the `svix` library against the source's secrets.
 */
export async function startReceiver(
  behaviours: Record<string, Behaviour>,
  secrets: Record<string, string[]>,
): Promise<{ url(source: string): string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const counts = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const source = (req.url ?? '/').slice(1);
      const body = Buffer.concat(chunks).toString('utf8');
      const verifiedWith = (secrets[source] ?? []).flatMap((secret, i) => {
        try {
          new Webhook(secret).verify(body, req.headers as Record<string, string>);
          return [i];
        } catch {
          return [];
        }
      });
      received.push({ source, headers: req.headers, body, verifiedWith, at: Date.now() });
      const n = counts.get(source) ?? 0;
      counts.set(source, n + 1);
      const answer = behaviours[source]?.(n) ?? { status: 404 };
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(`answer ${answer.status}`);
      };
      void Promise.all([
        answer.hold,
        answer.delayMs ? new Promise((r) => setTimeout(r, answer.delayMs)) : undefined,
      ]).then(reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (source) => `http://127.0.0.1:${port}/${source}`,
    received,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Waits until `check` returns a value that is not undefined/false, or fails after `timeoutMs`. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
