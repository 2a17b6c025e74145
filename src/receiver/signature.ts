import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { AppError } from '../errors.js';
import { WEBHOOK_SIGNING } from '../partner/assumptions.js';

/**
 * Standard Webhooks verification against several secrets at once (rotation: the old and the new
 * secret are both configured until every sender uses the new one). The HMAC covers
 * `id.timestamp.` and then the body's bytes exactly as received: the library would sign the body
 * decoded as UTF-8 (invalid bytes replaced), under which two different bodies share a signature.
 * The timestamp window is ours: WEBHOOK_TOLERANCE_SECONDS makes it configurable.
 */
export interface SignedHeaders {
  webhookId: string;
  timestamp: number;
}

export type Verifier = (raw: Buffer, headers: Record<string, string | string[] | undefined>) => SignedHeaders;

function unauthenticated(message: string): AppError {
  return new AppError(401, 'unauthenticated', message);
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function createVerifier(secrets: readonly string[], toleranceSeconds: number): Verifier {
  // The library's constructor validates each secret (it throws on a bad one); the key is the
  // base64 after the `whsec_` prefix, as the library reads it.
  const keys = secrets.map((s) => {
    new Webhook(s);
    return Buffer.from(s.startsWith('whsec_') ? s.slice('whsec_'.length) : s, 'base64');
  });
  return (raw, headers) => {
    const webhookId = header(headers, WEBHOOK_SIGNING.headers.id);
    const stamp = header(headers, WEBHOOK_SIGNING.headers.timestamp);
    const signature = header(headers, WEBHOOK_SIGNING.headers.signature);
    if (!webhookId || !stamp || !signature) {
      throw unauthenticated('webhook-id, webhook-timestamp and webhook-signature headers are required');
    }
    if (webhookId.length > 256) throw unauthenticated('webhook-id is too long');
    const timestamp = /^\d{1,12}$/.test(stamp) ? Number(stamp) : NaN;
    if (!Number.isFinite(timestamp)) throw unauthenticated('webhook-timestamp is not a Unix time in seconds');
    if (Math.abs(Date.now() / 1000 - timestamp) > toleranceSeconds) {
      throw unauthenticated(`webhook-timestamp is more than ${toleranceSeconds} s away from now`);
    }
    const given = signature
      .split(' ')
      .filter((s) => s.startsWith('v1,'))
      .map((s) => Buffer.from(s.slice(3)));
    for (const key of keys) {
      const expected = Buffer.from(
        createHmac('sha256', key).update(`${webhookId}.${timestamp}.`).update(raw).digest('base64'),
      );
      if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) {
        return { webhookId, timestamp };
      }
    }
    throw unauthenticated('no valid signature');
  };
}
