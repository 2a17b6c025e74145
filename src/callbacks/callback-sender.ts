import { Webhook } from 'standardwebhooks';

/**
 * One callback POST: the outcome's CloudEvent in structured mode, signed by Standard Webhooks
 * (https://www.standardwebhooks.com/): `webhook-id` (stable across retries: the PMS dedupes on
 * it), `webhook-timestamp` (seconds, the attempt's), `webhook-signature` (a `v1,<base64>` per
 * secret, space-separated, so a PMS holding either secret of a rotation verifies it). The signed
 * content is `<webhook-id>.<webhook-timestamp>.<body>`.
 */
export const CALLBACK_CONTENT_TYPE = 'application/cloudevents+json; charset=UTF-8';

/** What came of one attempt. `gone`: 410, the endpoint is disabled. */
export type AttemptResult = 'delivered' | 'failed' | 'timeout' | 'network_error' | 'gone';

export interface AttemptOutcome {
  result: AttemptResult;
  httpStatus: number | null;
  durationMs: number;
  /** Why it failed (the start of the answer's body, or the network error); null when delivered. */
  error: string | null;
}

/** The headers of one attempt. */
export function signCallback(
  secrets: readonly string[],
  webhookId: string,
  body: string,
  at: Date = new Date(),
): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  // Signed with the whole seconds sent in the header, so the receiver's recomputation matches.
  const signedAt = new Date(timestamp * 1000);
  return {
    'content-type': CALLBACK_CONTENT_TYPE,
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(webhookId, signedAt, body)).join(' '),
  };
}

/** Most characters of an answer's body kept as the attempt's error. */
const ERROR_CHARS = 200;

/**
 * Most bytes of an answer's body ever read (4 KiB): an endpoint's answer is read only for the start
 * of its error, so a large or endless body costs no memory; the rest is cancelled, not downloaded.
 */
export const ANSWER_READ_BYTES = 4096;

/** The start of a body, at most `maxBytes` of it read; the rest of the stream is cancelled. */
export async function readStart(res: Response, maxBytes = ANSWER_READ_BYTES): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      const part = value.subarray(0, maxBytes - size);
      chunks.push(part);
      size += part.length;
    }
  } finally {
    // Frees the connection without reading what is left (a no-op when the body has ended).
    await reader.cancel().catch(() => undefined);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/**
 * POSTs one callback and classifies the answer: 2xx delivered; 410 gone; any other status,
 * redirects included (never followed: the URL is the configured one), failed; no answer within
 * `timeoutMs`, timeout; refused or broken connection, network_error. Never throws.
 */
export async function sendCallback(request: {
  url: string;
  secrets: readonly string[];
  webhookId: string;
  body: string;
  timeoutMs: number;
}): Promise<AttemptOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const res = await fetch(request.url, {
      method: 'POST',
      headers: signCallback(request.secrets, request.webhookId, request.body),
      body: request.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(request.timeoutMs),
    });
    const text = await readStart(res).catch(() => '');
    const durationMs = elapsed();
    if (res.status >= 200 && res.status < 300) {
      return { result: 'delivered', httpStatus: res.status, durationMs, error: null };
    }
    return {
      result: res.status === 410 ? 'gone' : 'failed',
      httpStatus: res.status,
      durationMs,
      error: `HTTP ${res.status}${text ? `: ${text.slice(0, ERROR_CHARS)}` : ''}`,
    };
  } catch (error) {
    const durationMs = elapsed();
    const name = (error as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError') {
      return {
        result: 'timeout',
        httpStatus: null,
        durationMs,
        error: `no answer within ${request.timeoutMs} ms`,
      };
    }
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return {
      result: 'network_error',
      httpStatus: null,
      durationMs,
      error: cause?.code ?? cause?.message ?? (error as Error).message,
    };
  }
}
