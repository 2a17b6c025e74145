import { randomUUID } from 'node:crypto';
import { AUTHENTICATE_PATH, TOKEN_RESPONSE_FIELDS } from '../partner/assumptions.js';

/**
 * The probe's own small HTTP client: it must see the platform's answers as they are (status,
 * body, `X-Request-Id`), not as the production client would shape, retry or hide them. Each call
 * sends its own `X-Request-Id` (`probe-<uuid>`) so the evidence can be found in the platform's
 * logs.
 */
export interface ProbeAnswer {
  status: number;
  body: unknown;
  requestId: string;
}

export interface ProbeHttpOptions {
  baseUrl: string;
  accessKey: string;
  secretKey: string;
  enhancedSecurity?: boolean;
  timeoutMs?: number;
}

export interface ProbeHttp {
  /** POST authenticate; the raw answer (the probe checks its layout). */
  authenticate(): Promise<ProbeAnswer>;
  call(
    method: 'GET' | 'POST',
    path: string,
    options?: { query?: Record<string, string | number>; body?: unknown },
  ): Promise<ProbeAnswer>;
}

export function createProbeHttp(options: ProbeHttpOptions): ProbeHttp {
  const base = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 10_000;
  let token: string | null = null;

  async function send(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
    query?: Record<string, string | number>,
  ) {
    const url = new URL(`${base}${path}`);
    for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, String(v));
    const requestId = `probe-${randomUUID()}`;
    const response = await fetch(url, {
      method,
      headers: {
        accept: 'application/json',
        'x-request-id': requestId,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? (JSON.parse(text) as unknown) : null;
    } catch {
      // kept as text: the probe reports what it got
    }
    return {
      status: response.status,
      body: parsed,
      requestId: response.headers.get('x-request-id') ?? requestId,
    };
  }

  const http: ProbeHttp = {
    async authenticate() {
      const answer = await send(
        'POST',
        AUTHENTICATE_PATH,
        {},
        {
          access_key: options.accessKey,
          secret_key: options.secretKey,
        },
      );
      const body = (answer.body ?? {}) as Record<string, unknown>;
      const t = body[TOKEN_RESPONSE_FIELDS.token];
      if (answer.status === 200 && typeof t === 'string') token = t;
      return answer;
    },
    async call(method, path, callOptions = {}) {
      if (!token) await http.authenticate();
      const headers: Record<string, string> = { authorization: `Bearer ${token ?? ''}` };
      if (options.enhancedSecurity) headers['x-access-token'] = options.accessKey;
      return send(method, path, headers, callOptions.body, callOptions.query);
    },
  };
  return http;
}
