import { timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { AppError } from '../errors.js';

/**
 * Standard Webhooks verification against several secrets at once (rotation: the old and the new
 * secret are both configured until every sender uses the new one). The library signs; the
 * timestamp window is ours because the library fixes it at 5 minutes and
 * WEBHOOK_TOLERANCE_SECONDS makes it configurable.
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
  // Built once: the constructor decodes the base64 key.
  const signers = secrets.map((s) => new Webhook(s));
  return (raw, headers) => {
    const webhookId = header(headers, 'webhook-id');
    const stamp = header(headers, 'webhook-timestamp');
    const signature = header(headers, 'webhook-signature');
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
    const payload = raw.toString('utf8');
    for (const signer of signers) {
      const expected = Buffer.from(signer.sign(webhookId, new Date(timestamp * 1000), payload).slice(3));
      if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) {
        return { webhookId, timestamp };
      }
    }
    throw unauthenticated('no valid signature');
  };
}
