import type { z } from 'zod';
import { logSummary, type Logger } from '../logger.js';
import { exposeMetrics, metrics } from '../metrics.js';
import {
  PartnerApiError,
  extraEnvelopeFields,
  PartnerError,
  PartnerNetworkError,
  PartnerResponseError,
  PartnerTimeoutError,
} from './errors.js';
import type { Lane, RateBudget } from './rate-budget-types.js';
import { isRefusal } from './failure-classes.js';
import { MAX_ATTEMPTS, backoffMs, retryFor } from './retry-policy.js';
import { errorEnvelopeSchema } from './schemas.js';
import type { TokenManager } from './token-manager.js';
import { tracePartnerCall } from '../telemetry.js';
import { onThrottled } from './throttle.js';
import { randomUUID } from 'node:crypto';

/** Options of one call. */
export interface CallOptions {
  /** `X-Request-Id` to send (spec 7.3); an invalid or missing one is replaced by a UUID. */
  requestId?: string;
  /** Budget lane; default `poll` for GETs, `write` for writes. */
  lane?: Lane;
  signal?: AbortSignal;
  /** Time-out of each attempt. Default: the client's (10 s). */
  timeoutMs?: number;
}

export interface PartnerResponse<T> {
  data: T;
  status: number;
  /** The id the API answered with. */
  requestId: string;
  headers: Headers;
}

export interface CallSpec<T> {
  method: 'GET' | 'POST';
  /** Path template, e.g. `/partner/v1/applications/{id}/approve` (metrics, errors). */
  template: string;
  path: string;
  query?: URLSearchParams;
  body?: unknown;
  schema: z.ZodType<T>;
  /** Authenticate itself goes without a bearer token. Default true. */
  authenticated?: boolean;
  /**
   * Repeat on repeatable failures (GETs, spec 7.4.1). Writes: false, never repeated, except once
   * after a 401 with a new token. Default: true for GET.
   */
  retry?: boolean;
}

export interface TransportDeps {
  baseUrl: string;
  accessKey: string;
  enhancedSecurity: boolean;
  timeoutMs: number;
  budget?: RateBudget;
  logger: Logger;
  fetch: typeof fetch;
  tokens?: TokenManager;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

export type Transport = <T>(spec: CallSpec<T>, opts?: CallOptions) => Promise<PartnerResponse<T>>;

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** `Retry-After` in seconds (spec 8 gives seconds; an HTTP date is read too). */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

function parseReset(value: string | null): Date | undefined {
  if (value === null) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : undefined;
}

/** Turns a non-2xx answer into a PartnerApiError (spec 7.1): a missing code reads as bad_request. */
export function toApiError(
  status: number,
  text: string,
  headers: Headers,
  context: { method: string; endpoint: string; sentRequestId: string },
): PartnerApiError {
  let envelope: z.infer<typeof errorEnvelopeSchema>['error'] | undefined;
  try {
    const parsed = errorEnvelopeSchema.safeParse(JSON.parse(text));
    if (parsed.success) envelope = parsed.data.error;
  } catch {
    // Not JSON (a proxy's HTML page): the status decides.
  }
  const code = envelope?.code ?? 'bad_request';
  const requestId = headers.get('x-request-id') ?? envelope?.request_id ?? context.sentRequestId;
  const retryAfterSeconds = parseRetryAfter(headers.get('retry-after'));
  const rateLimitReset = parseReset(headers.get('x-ratelimit-reset'));
  return new PartnerApiError(
    {
      status,
      code,
      requestId,
      message: envelope?.message ?? `Partner API answered ${status}`,
      method: context.method,
      endpoint: context.endpoint,
      ...(envelope?.errors !== undefined && { errors: envelope.errors }),
      ...(envelope?.details !== undefined && { details: envelope.details }),
      ...(envelope?.error_id !== undefined && { errorId: envelope.error_id }),
      ...(envelope?.error_signature !== undefined && { errorSignature: envelope.error_signature }),
      ...(envelope?.processor_code !== undefined && { processorCode: envelope.processor_code }),
      ...(envelope?.processor_decline_code !== undefined && {
        processorDeclineCode: envelope.processor_decline_code,
      }),
      ...(envelope?.code === undefined && { codeMissing: true }),
      ...(envelope && { extra: extraEnvelopeFields(envelope) }),
      ...(retryAfterSeconds !== undefined && { retryAfterSeconds }),
      ...(rateLimitReset !== undefined && { rateLimitReset }),
    },
    { repeatable: retryFor(status, code) === 'retry' },
  );
}

/** A call that got no answer: timed out, or the network failed. */
function noAnswer(
  thrown: unknown,
  timedOut: boolean,
  endpoint: string,
  requestId: string,
  timeoutMs: number,
) {
  return timedOut
    ? new PartnerTimeoutError(`Partner API did not answer ${endpoint} within ${timeoutMs} ms`, {
        requestId,
        timeoutMs,
        cause: thrown,
      })
    : new PartnerNetworkError(`Partner API unreachable for ${endpoint}: ${(thrown as Error).message}`, {
        requestId,
        cause: thrown,
      });
}

/** The wait before repeating a call: Retry-After on a 429, else the back-off. */
function retryDelay(failure: PartnerError, attempt: number, random: () => number): number {
  const api = failure instanceof PartnerApiError ? failure : null;
  return backoffMs(
    attempt,
    {
      throttled: api?.status === 429,
      ...(api?.retryAfterSeconds !== undefined && { retryAfterSeconds: api.retryAfterSeconds }),
    },
    random,
  );
}

/**
 * One logical call: takes a budget slot per attempt, sends the token, request id and (enhanced
 * security) `X-Access-Token`, measures latency, feeds the budget what the API reports, and retries
 * only what the retry policy allows (GETs), renewing the token once on 401 for any call.
 */
export function createTransport(deps: TransportDeps): Transport {
  exposeMetrics('partner');
  const wait = deps.sleep ?? sleep;
  const random = deps.random ?? Math.random;
  const base = deps.baseUrl.replace(/\/+$/, '');

  return async function call<T>(spec: CallSpec<T>, opts: CallOptions = {}): Promise<PartnerResponse<T>> {
    const requestId = outgoingRequestId(opts.requestId);
    const lane: Lane = opts.lane ?? (spec.method === 'GET' ? 'poll' : 'write');
    const endpoint = `${spec.method} ${spec.template}`;
    const retry = spec.retry ?? spec.method === 'GET';
    const timeoutMs = opts.timeoutMs ?? deps.timeoutMs;
    const log = deps.logger.child({ endpoint, lane, sentRequestId: requestId });
    let renewed = false;

    for (let attempt = 1; ; attempt++) {
      if (deps.budget) await deps.budget.acquire(lane, opts.signal);
      const token = spec.authenticated === false ? undefined : await deps.tokens?.current();
      const headers = requestHeaders(deps, spec, requestId, token);
      const url = `${base}${spec.path}${spec.query && spec.query.size > 0 ? `?${spec.query.toString()}` : ''}`;

      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
      const started = performance.now();
      let failure: PartnerError;
      try {
        const res = await tracePartnerCall(endpoint, requestId, () =>
          deps.fetch(url, {
            method: spec.method,
            headers,
            ...(spec.body !== undefined && { body: JSON.stringify(spec.body) }),
            signal,
          }),
        );
        const text = await res.text();
        const seconds = (performance.now() - started) / 1000;
        metrics.partnerLatency.observe({ endpoint, status: String(res.status) }, seconds);
        const answeredId = res.headers.get('x-request-id') ?? requestId;
        learnFromHeaders(res);

        if (res.ok) {
          return {
            data: parseBody(spec, text, answeredId),
            status: res.status,
            requestId: answeredId,
            headers: res.headers,
          };
        }
        const error = toApiError(res.status, text, res.headers, {
          method: spec.method,
          endpoint,
          sentRequestId: requestId,
        });
        if (res.status === 429) await onThrottled(error, { budget: deps.budget, log });
        const decision = retryFor(error.status, error.code);
        if (decision === 'renew_token' && spec.authenticated !== false && !renewed) {
          renewed = true;
          deps.tokens?.invalidate(token);
          log.warn(
            { partnerRequestId: error.requestId, status: error.status, code: error.code },
            'partner token rejected, renewing once',
          );
          attempt--; // the repeat after a renewal is not one of the five attempts
          continue;
        }
        failure = error;
      } catch (thrown) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (thrown instanceof PartnerError) throw thrown;
        metrics.partnerLatency.observe({ endpoint, status: 'none' }, (performance.now() - started) / 1000);
        failure = noAnswer(thrown, timeout.aborted, endpoint, requestId, timeoutMs);
      }

      const fields = describe(failure);
      if (!retry || !failure.repeatable || attempt >= MAX_ATTEMPTS) {
        if (failure instanceof PartnerApiError && isRefusal(failure.status, failure.code)) {
          // The platform's answer (the outcome carries it): debug and one summary a minute.
          log.debug({ ...fields, attempt, partnerRequestId: failure.requestId }, 'partner call refused');
          logSummary(log, 'partner calls refused (each answer in its outcome)').add(fields.code as string);
        } else {
          log.warn(
            { ...fields, attempt, partnerRequestId: failure.requestId, err: failure },
            'partner call failed',
          );
        }
        throw failure;
      }
      const delay = retryDelay(failure, attempt, random);
      log.info(
        { ...fields, attempt, delayMs: Math.round(delay), partnerRequestId: failure.requestId },
        'partner call retrying',
      );
      await wait(delay, opts.signal);
    }

    function learnFromHeaders(res: Response): void {
      // Not from a 429 (remaining 0 by definition, spec 8): the pause covers it; learned, it fills a minute.
      if (!deps.budget || res.status === 429) return;
      const remaining = res.headers.get('x-ratelimit-remaining');
      const reset = parseReset(res.headers.get('x-ratelimit-reset'));
      if (remaining === null || reset === undefined) return;
      const [value, limit] = [Number(remaining), Number(res.headers.get('x-ratelimit-limit') ?? NaN)];
      // Not waited for (the budget logs a failed store); another scope's count is dropped there.
      if (Number.isInteger(value) && value >= 0)
        deps.budget.learn(value, reset, limit).catch(() => undefined);
    }
  };
}

/** Token, request id and (enhanced security) `X-Access-Token` of one attempt. */
function requestHeaders(
  deps: Pick<TransportDeps, 'enhancedSecurity' | 'accessKey'>,
  spec: CallSpec<unknown>,
  requestId: string,
  token: string | undefined,
): Record<string, string> {
  const headers: Record<string, string> = { accept: 'application/json', 'x-request-id': requestId };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (deps.enhancedSecurity) headers['x-access-token'] = deps.accessKey;
  if (spec.body !== undefined) headers['content-type'] = 'application/json';
  return headers;
}

function parseBody<T>(spec: CallSpec<T>, text: string, requestId: string): T {
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch (error) {
    throw new PartnerResponseError(`Partner API answered ${spec.template} with invalid JSON`, {
      requestId,
      cause: error,
    });
  }
  const parsed = spec.schema.safeParse(json);
  if (!parsed.success) {
    throw new PartnerResponseError(`Partner API answer of ${spec.template} has an unexpected shape`, {
      requestId,
      cause: parsed.error,
    });
  }
  return parsed.data;
}

function describe(error: PartnerError): Record<string, unknown> {
  return error instanceof PartnerApiError
    ? { status: error.status, code: error.code, errorKind: error.name }
    : { errorKind: error.name };
}

/** Spec 7.3: 1 to 128 characters of A-Z a-z 0-9 _ . - are kept; anything else is replaced. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * The `X-Request-Id` a call sends (spec 7.3): the caller's own when it follows the rule (1 to 128
 * characters of A-Z a-z 0-9 _ . -), so ids derived from a command id travel unchanged; otherwise a
 * new UUID (the API would replace an invalid one anyway, and then the caller's id would be lost
 * silently).
 */
export function outgoingRequestId(requested?: string): string {
  return requested !== undefined && REQUEST_ID_PATTERN.test(requested) ? requested : randomUUID();
}

/** Makes a valid request id from any text, e.g. `decision:7f3c…` → `decision_7f3c…`, cut to 128. */
export function toRequestId(text: string): string {
  const cleaned = text.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 128);
  return cleaned.length > 0 ? cleaned : randomUUID();
}
