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
 * ASSUMPTION (spec 2.2 "the example treats [the e-mail] as unique per customer"; the refusal is not
 * shown): creating a customer with an e-mail another customer holds is a `4xx` whose message or
 * `errors` say the e-mail is taken (the sandbox: `422 validation_error`, "email has already been
 * taken"). A registration refused so ends `email_in_use` (DESIGN.md, "Sources share one bridge"),
 * even when the source's own key cannot see the customer that holds the e-mail.
 */
export const EMAIL_TAKEN = /e-?mail\b.*\b(taken|in use|already exists|already registered)/i;

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
 * The assumptions the guarded write's proof rests on (DESIGN.md, "What the spec does not show";
 * decision 033). Each is described once, here: what it says, what breaks if it is false, the probe
 * step that checks it, and the names the read-back reads (src/guard/*-read-back.ts read them from
 * here, and so does the probe's check of it, src/partner-probe/checks/<id>.ts, so the probe checks what the
 * guard uses). Change a name here and both follow.
 */
export type GuardAssumptionId =
  | 'max_processing_time'
  | 'payment_visible_on_enrollment'
  | 'report_moves_updated_at'
  | 'decision_visible_on_application'
  | 'date_filters'
  | 'customers_newest_first';

/** One assumption the guarded write's proof rests on, as the probe reports it. */
export interface GuardAssumption {
  id: GuardAssumptionId;
  statement: string;
  breaksIfFalse: string;
  /** The probe step that checks it; `--write` steps need a sandbox environment. */
  probeStep: string;
}

/** Declares a guard assumption with the names its read-back reads (kept literal, readonly). */
const guardAssumption = <const T extends GuardAssumption>(assumption: T): Readonly<T> => assumption;

/**
 * Spec 7.2 shows `503 request_timeout` ("processing time exceeded") but not the bound. The guard
 * concludes "not applied" only from a read made at least this long after its last send, and before
 * that waits and reads again, never writes. Overridden by `PARTNER_MAX_PROCESSING_MS`.
 */
export const MAX_PROCESSING_TIME = guardAssumption({
  id: 'max_processing_time',
  statement: 'a write shows on its record within PARTNER_MAX_PROCESSING_MS of being sent, or never',
  breaksIfFalse: 'a write landing after the bound is sent again: applied twice',
  probeStep: 'write: time until the decision and the payment show (must be below the bound)',
  defaultMs: 30_000,
});
export const PARTNER_MAX_PROCESSING_MS_DEFAULT = MAX_PROCESSING_TIME.defaultMs;

/**
 * Spec 4.3: the report's body and response are "not shown"; the spec says only that every record
 * carries `updated_at`. The payment read-back counts the payments matching the command (amount,
 * date, period) in `field` of the enrollment; a record without that list gives `unknown`, never
 * `not_applied`, so nothing is paid twice.
 */
export const PAYMENT_VISIBLE_ON_ENROLLMENT = guardAssumption({
  id: 'payment_visible_on_enrollment',
  statement:
    "a reported payment appears in the enrollment record's rental_payments (amount_cents, paid_on, period)",
  breaksIfFalse:
    'the payment read-back cannot see a landed payment: every ambiguous payment is parked unverified',
  probeStep: 'write: report one payment, read the enrollment back',
  collection: 'enrollments',
  field: 'rental_payments',
  payment: { amountCents: 'amount_cents', paidOn: 'paid_on', period: 'period' },
});

/**
 * Not shown. The payment read-back reads "`field` unchanged since the baseline" as "not applied".
 * Harmless if false while payments are visible (a landed payment is counted); with payments not
 * visible it would be a double payment, which is why a record without the payments list gives
 * `unknown` whatever its `updated_at`.
 */
export const REPORT_MOVES_UPDATED_AT = guardAssumption({
  id: 'report_moves_updated_at',
  statement: "a payment report moves the enrollment's updated_at",
  breaksIfFalse:
    'with payments invisible too, "unchanged" would read as "not applied": paid twice (the guard answers unknown instead)',
  probeStep: 'write: report one payment, compare updated_at before and after',
  collection: 'enrollments',
  field: 'updated_at',
});

/**
 * Spec 4.3: decisions "not shown". The decision read-back reads `status` (the target status of the
 * decision means applied) and `updatedAt` (unchanged since the snapshot means not applied). If
 * false, a second decision would meet a 409, but a decline after an approve that landed would not.
 */
export const DECISION_VISIBLE_ON_APPLICATION = guardAssumption({
  id: 'decision_visible_on_application',
  statement: "a decision moves the application's status and updated_at",
  breaksIfFalse: 'a landed decision reads as not applied and is sent again',
  probeStep: "write: decide one application, read it back by the guard's rule",
  collection: 'applications',
  status: 'status',
  updatedAt: 'updated_at',
  targetStatus: { approve: 'approved', decline: 'declined' },
});

/**
 * Spec 4.7 (date filters, inclusive, whole UTC days). The decision read-back lists the
 * applications with `filter` from the snapshot's day, and reads "absent since the baseline's day"
 * as unchanged.
 */
export const DATE_FILTERS = guardAssumption({
  id: 'date_filters',
  statement: 'last_updated_from_date keeps records updated on or after that whole UTC day (spec 4.7)',
  breaksIfFalse: 'the decision read-back could miss a changed application and call it unchanged',
  probeStep: 'read: applications list with and without the filter',
  collection: 'applications',
  filter: 'last_updated_from_date',
});

/**
 * Spec 4.2, 4.6.3: customers are ordered by `order_by`, default `created_at` descending, "with ties
 * broken by id"; neither the tie direction nor the precision of `created_at` is shown. The
 * onboarding read-back (src/guard/read-backs/newest-first.ts, decision 018) walks the newest-first list down to
 * the first customer strictly older than the snapshot's newest one. It also assumes that
 * `created_at` and `id` never change; that ties are broken by id one way or the other, the same on
 * every page (a total order: pages neither overlap nor skip); that `created_at` is cut to its
 * precision by truncating or rounding (either keeps "created later, never older"); that the e-mail
 * is unique (spec 2.2); and that a customer created shows in the list within the processing bound
 * (else the retry is refused and the refusal read back). Where the snapshot's page 1 did not hold
 * every customer sharing the newest `created_at`, a tied customer with the e-mail is only "maybe
 * ours" (`unknown`). A customer or marker without `created_at` gives `unknown`, never "not
 * applied".
 */
export const CUSTOMERS_NEWEST_FIRST = guardAssumption({
  id: 'customers_newest_first',
  statement:
    'the customer list is newest first by created_at, and a customer created later never shows an older created_at (ties by id in either direction, any precision)',
  breaksIfFalse:
    'the registration read-back could stop before the customer a write created and call it not applied (the retry is then refused, and the refusal read back)',
  probeStep:
    'write: create two customers within one second, read the list back (also tells tie direction and precision)',
  collection: 'customers',
  orderBy: 'created_at',
  orderDirection: 'desc',
});

/**
 * Every assumption the guard relies on, in the order the probe checks them (its rows come out in
 * this order). The probe has one check per id (src/partner-probe/checks/index.ts; test/partner-probe/checks.test.ts).
 */
export const GUARD_ASSUMPTIONS: readonly GuardAssumption[] = [
  DATE_FILTERS,
  DECISION_VISIBLE_ON_APPLICATION,
  PAYMENT_VISIBLE_ON_ENROLLMENT,
  REPORT_MOVES_UPDATED_AT,
  MAX_PROCESSING_TIME,
  CUSTOMERS_NEWEST_FIRST,
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
