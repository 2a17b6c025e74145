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
export type RentalPayment = { amount_cents: number; paid_on: string; period?: string };
export type ReportRentalPaymentsBody = { rental_payments: RentalPayment[] };

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

/**
 * ASSUMPTION (spec 8 lists `/partner/v1/*` at 650/min and issue_access_token at 2,500/min, and
 * says nothing of `/v1/partners/customers` or authenticate): every call the client makes takes a
 * slot of the shared budget, including authenticate and create-customer. That can only make the
 * client slower, never throttled.
 */
export const EVERY_CALL_TAKES_A_BUDGET_SLOT = true;

/**
 * ASSUMPTION (spec 2.3 "all other fields: not shown"; spec 4.6.2 orders by id, newest first):
 * list records carry `created_at` (ISO 8601) set by the API's clock when the record was created,
 * and answers carry the standard `Date` header from the same clock. The drift-safe page walk
 * (pagination.ts) uses both on ascending lists to tell a record created while it paged; a record
 * without `created_at` makes it fall back to `updated_at`, and one with neither to re-reading
 * every page boundary, so a wrong guess costs requests, never a skipped record.
 */
export const RECORDS_CARRY_CREATED_AT = true;
