import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANSWER_READ_BYTES, sendCallback } from '../../src/callbacks/callback-sender.js';

/**
 * Issue 51 item 6: a callback endpoint's answer is read only up to a few KiB. An endpoint that
 * answers an error with an endless body costs no memory and no time: the start of it is the
 * attempt's error, the rest is never downloaded.
 */
describe('a callback endpoint answering an endless body', () => {
  let server: Server;
  let url: string;
  let sentBytes = 0;
  let closed: Promise<void>;

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      res.writeHead(500, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      let onClose!: () => void;
      closed = new Promise((r) => (onClose = r));
      // Writes for as long as the client reads: an endless answer.
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) sentBytes += chunk.length;
      };
      res.on('drain', pump);
      res.on('close', onClose);
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/outcomes`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('keeps the start of it as the error, reads a few KiB, and lets the connection go', async () => {
    const outcome = await sendCallback({
      url,
      secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      webhookId: 'msg_endless',
      body: '{}',
      timeoutMs: 10_000,
    });
    expect(outcome).toMatchObject({ result: 'failed', httpStatus: 500 });
    expect(outcome.error).toMatch(/^HTTP 500: x{200}$/);
    // The client cancelled the body: the server sees its answer's connection closed, having sent
    // no more than the socket buffers hold, far from what an endless answer would be.
    await closed;
    expect(ANSWER_READ_BYTES).toBeLessThanOrEqual(8192);
    expect(sentBytes).toBeLessThan(16 * 1024 * 1024);
  });
});
