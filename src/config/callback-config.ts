import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { secretJson } from './secret-json.js';

/**
 * The configuration of outcome callbacks (docs/decisions/029-outcome-callbacks.md), spread into
 * src/config/config.ts's schema. A callback URL comes from here only, never from a request.
 */

/** One source's endpoint: where its outcomes go and the secrets that sign them. */
export interface CallbackEndpointConfig {
  url: string;
  /** Standard Webhooks secrets (`whsec_<base64>`); every one signs each callback (rotation). */
  secrets: string[];
  /** This endpoint's time-out per attempt; default CALLBACK_TIMEOUT_MS. */
  timeout_ms?: number;
}

const endpoint = z
  .object({
    url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }),
    secrets: z
      .array(
        z.string().refine(isSigningSecret, {
          // Never echo the value: it is a secret.
          message: 'each secret must be a Standard Webhooks secret, whsec_<base64>',
        }),
      )
      .min(1, 'at least one secret'),
    timeout_ms: z.number().int().positive().max(120_000).optional(),
  })
  .strict();

function isSigningSecret(secret: string): boolean {
  if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)) return false;
  try {
    new Webhook(secret);
    return true;
  } catch {
    return false;
  }
}

/** PMS_CALLBACKS: JSON, source → endpoint. */
export const callbacksBySource = secretJson(
  '{"acme":{"url":"https://pms.example/outcomes","secrets":["whsec_..."]}}',
).pipe(z.record(z.string().regex(/^[a-z0-9_-]+$/i), endpoint));

const positiveInt = z.coerce.number().int().positive();

/** The environment variables of outcome callbacks (docs/pms.md, "Outcome callbacks"). */
export const callbackSettings = {
  /**
   * Per PMS source, where its commands' outcomes are POSTed, JSON:
   * {"acme":{"url":"https://pms.example/outcomes","secrets":["whsec_new","whsec_old"],"timeout_ms":5000}}.
   * A source without an entry gets no callbacks. Default {}.
   */
  PMS_CALLBACKS: callbacksBySource.default({}),
  /** Time-out of one callback POST (a source's `timeout_ms` overrides it). Default 10000 ms. */
  CALLBACK_TIMEOUT_MS: positiveInt.max(120_000).default(10_000),
  /** The wait after a callback's first failure; each further failure doubles it (full jitter). Default 5000 ms. */
  CALLBACK_RETRY_INITIAL_MS: positiveInt.default(5000),
  /** No wait between two attempts exceeds this. Default 3600000 ms (1 h). */
  CALLBACK_RETRY_MAX_DELAY_MS: positiveInt.default(3_600_000),
  /**
   * How long a callback is retried, from the outcome's arrival (or its redelivery), before it
   * becomes a dead letter. Default 86400000 ms (24 h, as Svix).
   */
  CALLBACK_RETRY_SPAN_MS: positiveInt.default(86_400_000),
  /** Failures in a row that open an endpoint's circuit breaker. Default 5. */
  CALLBACK_BREAKER_FAILURES: positiveInt.default(5),
  /** How long an open breaker waits before one probe; doubled after each failed probe, up to CALLBACK_RETRY_MAX_DELAY_MS. Default 30000 ms. */
  CALLBACK_BREAKER_COOLDOWN_MS: positiveInt.default(30_000),
  /** Callbacks in flight at once per source to start from (the adaptive limit's start). Default 4. */
  CALLBACK_CONCURRENCY: positiveInt.max(64).default(4),
  /**
   * The most callbacks in flight at once per source: the limit grows toward it while the endpoint
   * answers fast, and shrinks when it slows or fails. Equal to CALLBACK_CONCURRENCY: fixed. Default 64.
   */
  CALLBACK_MAX_CONCURRENCY: positiveInt.max(256).default(64),
  /** How often each source's loop looks for due deliveries (new outcomes wake it at once). Default 1000 ms. */
  CALLBACK_POLL_MS: positiveInt.default(1000),
} as const;
