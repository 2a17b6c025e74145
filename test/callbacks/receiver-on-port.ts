import { createServer } from 'node:http';
import { Webhook } from 'svix';

/** A 2xx endpoint on a given port (one that refused connections until now), verifying with svix. */
export async function startReceiverOn(
  port: number,
  secrets: string[],
): Promise<{ received: Array<{ webhookId: string; verified: boolean }>; close(): Promise<void> }> {
  const received: Array<{ webhookId: string; verified: boolean }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const verified = secrets.some((s) => {
        try {
          new Webhook(s).verify(body, req.headers as Record<string, string>);
          return true;
        } catch {
          return false;
        }
      });
      received.push({ webhookId: String(req.headers['webhook-id']), verified });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    received,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
