/**
 * Every assumption rentbridge makes about what the Partner API spec does not show ("not shown"),
 * in one place, so the real values replace them here and nowhere else (DESIGN.md, "What the spec
 * does not show"). The client, the sandbox, the receiver and the tests import them from here.
 */

/**
 * ASSUMPTION (spec 4.1 "response field layout: not shown"): `POST /partner/v1/authenticate`
 * answers `{ "token": "<JWT>", "expires_in": <seconds> }`. The client reads the lifetime from the
 * JWT's `exp` claim first and falls back to `expires_in` (the JWT is what the spec does promise).
 */
export const AUTHENTICATE_PATH = '/partner/v1/authenticate';
export const TOKEN_RESPONSE_FIELDS = { token: 'token', expiresIn: 'expires_in' } as const;

/**
 * ASSUMPTION (spec 4.3 "paths and bodies of application decisions: not shown"):
 * `POST /partner/v1/applications/{id}/approve` and `.../decline`, body `{ "reason"? }`,
 * answering the application record.
 */
export const APPLICATION_DECISION_PATHS = {
  approve: '/partner/v1/applications/{id}/approve',
  decline: '/partner/v1/applications/{id}/decline',
} as const;
export type DecisionBody = { reason?: string };

/**
 * ASSUMPTION (spec 4.3 "body and response: not shown"): `POST
 * /partner/v1/enrollments/{id}/report_rental_payments` with
 * `{ "rental_payments": [ { "amount_cents", "paid_on" (YYYY-MM-DD), "period"? } ] }`. The answer is
 * kept as unknown JSON.
 */
export const REPORT_RENTAL_PAYMENTS_PATH = '/partner/v1/enrollments/{id}/report_rental_payments';
type RentalPayment = { amount_cents: number; paid_on: string; period?: string };
export type ReportRentalPaymentsBody = { rental_payments: RentalPayment[] };

/**
 * ASSUMPTION (spec 3 and 4.3 show enrollments as a list and a business rule, "one active enrollment
 * per customer", but no create call): `POST /partner/v1/enrollments` with `{ "customer_id" }`,
 * answering the enrollment record (`status: "active"`). A second active enrollment for the
 * customer is refused with the legacy business-rule error (spec 7.1, 7.2: `400`, no `code`).
 */
export const CREATE_ENROLLMENT_PATH = '/partner/v1/enrollments';
export type CreateEnrollmentBody = { customer_id: string | number };

/**
 * ASSUMPTION (spec 4.4 "path: not shown"): the users and magic-link collections sit beside the
 * others, paginated, without a date filter.
 */
export const USERS_PATH = '/partner/v1/users';
export const MAGIC_LINKS_PATH = '/partner/v1/magic_links';

/**
 * Spec 4.2 shows the create-customer path only in the request examples, in the `/v1/partners/`
 * form; we use it as shown. ASSUMPTION: its answer is the customer record.
 */
export const CREATE_CUSTOMER_PATH = '/v1/partners/customers';

/**
 * ASSUMPTION (spec 4.2 "request body: not shown"): `POST /partner/v1/customers/check` takes the same
 * fields as the create input and answers unknown JSON on success.
 */
export const CHECK_CUSTOMER_PATH = '/partner/v1/customers/check';

/**
 * ASSUMPTION (spec 4.2 "body and response: not shown"): `POST
 * /partner/v1/customers/{customer_id}/issue_access_token` takes no body and answers
 * `{ "token": "<token>" }` (plus unknown fields, kept).
 */
export const ISSUE_ACCESS_TOKEN_PATH = '/partner/v1/customers/{id}/issue_access_token';

/**
 * ASSUMPTION (spec 6 "signing: not shown"): webhooks are signed the Standard Webhooks way
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature`, HMAC-SHA256 over
 * `${id}.${timestamp}.${body}`, secrets `whsec_<base64>`).
 */
export const WEBHOOK_SIGNING = {
  scheme: 'standard-webhooks',
  headers: { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' },
} as const;

/**
 * ASSUMPTION (spec 6 "event kinds, payload shapes: not shown"): a webhook body is
 * `{ "type": "<singular>.updated" | "<singular>.deleted", "data": <record> }`, e.g.
 * `application.updated` with the whole application record.
 */
export const WEBHOOK_EVENT_ACTIONS = ['updated', 'deleted'] as const;
export type WebhookEventAction = (typeof WEBHOOK_EVENT_ACTIONS)[number];
export function webhookEventType(singular: string, action: WebhookEventAction): string {
  return `${singular}.${action}`;
}

/*
 * ASSUMPTION (spec 8 lists `/partner/v1/*` at 650/min and issue_access_token at 2,500/min, and
 * says nothing of `/v1/partners/customers` or authenticate): every call the client makes takes a
 * slot of the shared budget, including authenticate and create-customer (src/partner/transport.ts
 * acquires one per attempt). That can only make the client slower, never throttled.
 */

/**
 * ASSUMPTION (spec 7.2 shows `503 request_timeout`, "processing time exceeded", but not the
 * bound): the Partner API stops working on a write after at most this long, and a write not
 * applied by then never will be. The guard rests on it (DESIGN.md, "The guarded write"): it
 * concludes "not applied" only from a read made at least this long after its last send, and
 * before that waits and reads again, never writes. Overridden by `PARTNER_MAX_PROCESSING_MS`.
 *
 * If false (a write can land later than this): a read-back made after the bound says
 * "unchanged", the guard writes again and the late write lands too — a double payment.
 * Checked by: `rentbridge probe --write`, step `write.visible_within_bound` (how long a change
 * took to show on its record).
 */
export const PARTNER_MAX_PROCESSING_MS_DEFAULT = 30_000;

/**
 * GUARD ASSUMPTION (spec 4.3: the report's body and response are "not shown"; the spec says
 * only that every record carries `updated_at`): a reported payment appears on its enrollment's
 * record, in `rental_payments`, with its `amount_cents`, `paid_on` and `period`. The payment
 * read-back counts matching payments there.
 *
 * If false (payments kept elsewhere): "no new payment on the record" proves nothing. The guard
 * then answers `unknown` (never `not_applied`) and parks the payment as `unverified`, so nothing
 * is paid twice, but every ambiguous payment needs ops. Checked by: `rentbridge probe --write`,
 * step `payment_visible_on_enrollment`.
 */
export const PAYMENT_VISIBLE_ON_ENROLLMENT = { field: 'rental_payments' } as const;

/**
 * GUARD ASSUMPTION (not shown): reporting a payment moves the enrollment's `updated_at`. The
 * payment read-back reads "`updated_at` unchanged since the baseline" as "not applied".
 *
 * If false while payments are visible: harmless (a landed payment is counted). If false while
 * payments are not visible, an unchanged `updated_at` would say "not applied" after a write
 * that landed: a double payment — which is why a record without `rental_payments` gives
 * `unknown` whatever its `updated_at`. Checked by: `rentbridge probe --write`, step
 * `report_moves_updated_at`.
 */
export const REPORT_MOVES_UPDATED_AT = true;

/**
 * GUARD ASSUMPTION (spec 4.3 decisions "not shown"; 4.7 date filters): a decision moves the
 * application's `status` to `approved`/`declined` and its `updated_at` to now, and the list's
 * `last_updated_from_date` filter (inclusive, whole UTC days) then finds it. The decision
 * read-back reads the status, and "absent from the list since the baseline's day" as unchanged.
 *
 * If false: a landed decision could read as "not applied" and be sent again (the second one
 * would meet a 409, but a decline after an approve that landed would not). Checked by:
 * `rentbridge probe` step `date_filters` (read-only) and `--write` step
 * `decision_visible_on_application`.
 */
export const DECISION_VISIBLE_ON_APPLICATION = { status: 'status', updatedAt: 'updated_at' } as const;

/**
 * GUARD ASSUMPTION (spec 4.2, 4.6.3: customers are ordered by `order_by`, default `created_at`
 * descending, "with ties broken by id"; neither the direction of the tie-break nor the precision of
 * `created_at` is shown): the onboarding read-back (src/guard/newest-first.ts, decision 018) finds
 * the customer a registration created by walking the newest-first list down to the first customer
 * strictly older than the snapshot's newest one. It still assumes:
 *
 * - a customer created after another never carries an older `created_at` (the platform's clock
 *   does not step back between serving the snapshot and creating ours, at whatever precision);
 * - the list is sorted by `created_at` (newest first) before anything else, so every customer
 *   created since the snapshot sorts before the first strictly older one;
 * - `created_at` and `id` never change, so a customer's place in the order is fixed;
 * - the snapshot's page 1 holds every customer sharing the newest `created_at` (else a tied
 *   customer with the e-mail can only be "maybe ours": `unknown`);
 * - a customer created shows in the list within PARTNER_MAX_PROCESSING_MS (the processing bound,
 *   as for every write).
 *
 * It no longer assumes a tie direction or a precision: both directions and any precision are
 * sound. A customer or snapshot marker without `created_at` gives `unknown`, never "not applied".
 * If false (the clock steps back, the list is not sorted by created_at, it lags past the bound):
 * the customer ours created can be missed, the read-back says "not applied" and the retry is
 * refused (e-mail taken). The guard then reads again, and the refusal ends `applied` if the
 * customer now shows as created since the snapshot, else `rejected` (the walk's rule again).
 * Checked by: `rentbridge probe --write`, steps `customer order`, `customer tie-break` and
 * `created_at precision`.
 */
export const CUSTOMERS_NEWEST_FIRST = { orderBy: 'created_at', orderDirection: 'desc' } as const;

/** One assumption the guarded write's proof rests on, as the probe reports it. */
export interface GuardAssumption {
  id:
    | 'max_processing_time'
    | 'payment_visible_on_enrollment'
    | 'report_moves_updated_at'
    | 'decision_visible_on_application'
    | 'date_filters'
    | 'customers_newest_first';
  statement: string;
  breaksIfFalse: string;
  /** The probe step that checks it; `--write` steps need a sandbox environment. */
  probeStep: string;
}

/** Every assumption the guard relies on (DESIGN.md, "What the spec does not show"). */
export const GUARD_ASSUMPTIONS: readonly GuardAssumption[] = [
  {
    id: 'max_processing_time',
    statement: 'a write shows on its record within PARTNER_MAX_PROCESSING_MS of being sent, or never',
    breaksIfFalse: 'a write landing after the bound is sent again: applied twice',
    probeStep: 'write: time until the decision and the payment show (must be below the bound)',
  },
  {
    id: 'payment_visible_on_enrollment',
    statement:
      "a reported payment appears in the enrollment record's rental_payments (amount_cents, paid_on, period)",
    breaksIfFalse:
      'the payment read-back cannot see a landed payment: every ambiguous payment is parked unverified',
    probeStep: 'write: report one payment, read the enrollment back',
  },
  {
    id: 'report_moves_updated_at',
    statement: "a payment report moves the enrollment's updated_at",
    breaksIfFalse:
      'with payments invisible too, "unchanged" would read as "not applied": paid twice (the guard answers unknown instead)',
    probeStep: 'write: report one payment, compare updated_at before and after',
  },
  {
    id: 'decision_visible_on_application',
    statement: "a decision moves the application's status and updated_at",
    breaksIfFalse: 'a landed decision reads as not applied and is sent again',
    probeStep: "write: decide one application, read it back by the guard's rule",
  },
  {
    id: 'date_filters',
    statement: 'last_updated_from_date keeps records updated on or after that whole UTC day (spec 4.7)',
    breaksIfFalse: 'the decision read-back could miss a changed application and call it unchanged',
    probeStep: 'read: applications list with and without the filter',
  },
  {
    id: 'customers_newest_first',
    statement:
      'the customer list is newest first by created_at, and a customer created later never shows an older created_at (ties by id in either direction, any precision)',
    breaksIfFalse:
      'the registration read-back could stop before the customer a write created and call it not applied (the retry is then refused, and the refusal read back)',
    probeStep:
      'write: create two customers within one second, read the list back (also tells tie direction and precision)',
  },
];

/**
 * ASSUMPTION (spec 2.3 "all other fields: not shown"; spec 4.6.2 orders by id, newest first):
 * list records carry `created_at` (ISO 8601) set by the API's clock when the record was created,
 * and answers carry the standard `Date` header from the same clock. The drift-safe page walk
 * (pagination.ts) uses both on ascending lists to tell a record created while it paged; a record
 * without `created_at` makes it fall back to `updated_at`, and one with neither to re-reading
 * every page boundary, so a wrong guess costs requests, never a skipped record.
 */
export const RECORDS_CARRY_CREATED_AT = true;
