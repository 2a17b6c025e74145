import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { type Logger, logSummary } from '../../logger.js';

/**
 * The demo PMS's callback endpoint (`rentbridge start --demo`): it receives the
 * outcome of each of its commands as a PMS would, verifies the Standard Webhooks signature, and
 * logs it (component `demo-pms`), so the demo's log shows the loop closing.
 */
export async function startDemoPmsCallbacks(options: {
  secret: string;
  logger: Logger;
}): Promise<{ url: string; close(): Promise<void> }> {
  const log = options.logger.child({ component: 'demo-pms' });
  const summary = logSummary(log, 'demo PMS received outcome callbacks (count by status)');
  let received = 0;
  const webhook = new Webhook(options.secret);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const event = webhook.verify(body, req.headers as Record<string, string>) as {
          type?: string;
          data?: { command_id?: string; command_type?: string; status?: string; error?: { code?: string } };
        };
        const fields = {
          webhookId: req.headers['webhook-id'],
          type: event.type,
          commandType: event.data?.command_type,
          commandId: event.data?.command_id,
          status: event.data?.status,
          errorCode: event.data?.error?.code,
        };
        // The first one at info shows the loop closing; then one line a minute counts them by
        // status (issue 41: a line per callback scrolled the banner away). Each is at debug.
        log[received++ === 0 ? 'info' : 'debug'](fields, 'demo PMS received an outcome callback');
        summary.add(fields.status ?? 'unknown');
        res.writeHead(204).end();
      } catch (error) {
        log.warn({ err: error }, 'demo PMS refused a callback: the signature does not verify');
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/outcomes`,
    async close() {
      summary.flush();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
