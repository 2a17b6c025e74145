/**
 * The sandbox's settings, changed through `PUT /__sandbox/config`. The first six and
 * `max_processing_ms` are the DESIGN.md contract; the rest are sandbox-only knobs so tests need not wait real minutes.
 */
export interface SandboxConfig {
  /** Requests per rolling window per source IP on `/partner/v1/*`; null turns the limit off. Default 650 (spec 8). */
  rate_limit_per_minute: number | null;
  /** The separate limit of `issue_access_token`; null turns it off. Default 2,500 (spec 8). */
  issue_token_rate_limit_per_minute: number | null;
  /** Length of the rolling window. Default 60 (spec 8: "per minute"). */
  rate_limit_window_seconds: number;
  /** Lifetime of API tokens. Default 3600. 0 issues tokens that are already expired. */
  token_ttl_seconds: number;
  /** Spec 5.5: every request but authenticate must carry `X-Access-Token: <access key>`. Default false. */
  enhanced_security: boolean;
  /** Where state-change webhooks are POSTed; null sends none. */
  webhook_url: string | null;
  /** Standard Webhooks secret (`whsec_<base64>`) the deliveries are signed with. */
  webhook_secret: string | null;
  /** Attempts per delivery before it is marked failed. Default 5. */
  webhook_max_attempts: number;
  /** Back-off before the second attempt, doubled each time after. Default 500 ms. */
  webhook_retry_base_ms: number;
  /**
   * The longest processing time of a request (spec 7.2 `503 request_timeout`; the bound the
   * guard assumes, PARTNER_MAX_PROCESSING_MS): a request delayed past it (a `delay` fault) answers
   * `503 request_timeout` and is NOT applied; one delayed less is applied when its delay ends,
   * even if the client has gone. Default 30000 ms.
   */
  max_processing_ms: number;
  /**
   * Sandbox only, to break the guard's assumptions on purpose (the probe must name each):
   * `false` lists enrollments without `rental_payments` (payments kept "elsewhere"). Default true.
   */
  enrollment_payments_visible: boolean;
  /** Sandbox only: `false` leaves an enrollment's `updated_at` alone when a payment is reported. Default true. */
  report_moves_updated_at: boolean;
  /**
   * Sandbox only: a decision or payment report answers at once but shows on its record only this
   * long after (0: at once). Set above `max_processing_ms`, it breaks the processing bound.
   */
  write_visibility_delay_ms: number;
  /**
   * Sandbox only: a customer or enrollment created through the Partner API shows in the lists
   * only this long after (a lagging read replica), while the platform itself sees it at once (a
   * second customer with its e-mail is refused). Set above `max_processing_ms`, it breaks the
   * processing bound for creations. Default 0.
   */
  list_lag_ms: number;
  /**
   * How precise the `created_at` the sandbox gives a new record is (spec 2.3 shows no precision):
   * `milliseconds` (default) or `seconds` (`2026-11-25T04:16:22Z`, as many APIs serialize), under
   * which customers created in the same second tie in the newest-first customer list.
   */
  created_at_precision: 'milliseconds' | 'seconds';
  /**
   * The id order among customers that tie on the list's `order_by` field (spec 4.6.3: "ties broken
   * by id", direction not shown): `ascending` or `descending` whatever `order_direction` says;
   * null (default) follows `order_direction`.
   */
  tie_break: 'ascending' | 'descending' | null;
}

export function defaultConfig(): SandboxConfig {
  return {
    rate_limit_per_minute: 650,
    issue_token_rate_limit_per_minute: 2500,
    rate_limit_window_seconds: 60,
    token_ttl_seconds: 3600,
    enhanced_security: false,
    webhook_url: null,
    webhook_secret: null,
    webhook_max_attempts: 5,
    webhook_retry_base_ms: 500,
    max_processing_ms: 30_000,
    enrollment_payments_visible: true,
    report_moves_updated_at: true,
    write_visibility_delay_ms: 0,
    list_lag_ms: 0,
    created_at_precision: 'milliseconds',
    tie_break: null,
  };
}
