/**
 * The load generator of `npm run bench -- ingest`, in a process of its own so that the figures
 * measure the server, not the two sharing an event loop. Env: URL, CONNECTIONS, SECONDS, SECRET
 * (`whsec_...`). Sends signed PMS rent payments, each with its own webhook-id and payment id, for
 * SECONDS with CONNECTIONS in flight; prints one JSON line: acks/s, p50/p99 (ms), non-2xx, errors.
 */
import { createHmac, randomUUID } from 'node:crypto';
import autocannon from 'autocannon';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const url = env('URL');
const connections = Number(env('CONNECTIONS'));
const seconds = Number(env('SECONDS'));
const secret = env('SECRET');
// node:crypto signs the same Standard Webhooks signature as the library, 7x cheaper.
const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
const sign = (id: string, at: number, body: string) =>
  `v1,${createHmac('sha256', key).update(`${id}.${at}.${body}`).digest('base64')}`;

const result = await autocannon({
  url,
  connections,
  duration: seconds,
  requests: [
    {
      method: 'POST',
      setupRequest: (req) => {
        const id = `msg_${randomUUID()}`;
        const body = JSON.stringify({
          type: 'rent_payment.received',
          data: {
            payment_id: `pay-${randomUUID()}`,
            enrollment_id: `enr-${Math.floor(Math.random() * 1000)}`,
            amount_cents: 125_000,
            paid_on: '2026-11-01',
          },
        });
        const at = Math.floor(Date.now() / 1000);
        return {
          ...req,
          body,
          headers: {
            'content-type': 'application/json',
            'webhook-id': id,
            'webhook-timestamp': String(at),
            'webhook-signature': sign(id, at, body),
          },
        };
      },
    },
  ],
});
process.stdout.write(
  `${JSON.stringify({
    acksPerSecond: Math.round(result['2xx'] / seconds),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  })}\n`,
);
