import { z } from 'zod';
import { commandContracts, type CommandKind } from './command-contracts.js';
import { NO_ANSWER_CODE_LIST, NO_ANSWER_CODES } from '../partner/errors.js';

/**
 * The outcome of every command, published on outcomes.application-decisions /
 * outcomes.rental-payments / outcomes.customer-registrations / outcomes.enrollments as the `data` of a CloudEvent keyed by the target record's id. A
 * redelivered or redriven command that is already final publishes the same outcome again (same
 * CloudEvent id), so back-office consumers can de-duplicate on it.
 */

/** Every `command_type`, from the one list of command types (command-contracts.ts). */
export const COMMAND_KINDS = commandContracts().map((c) => c.kind) as [CommandKind, ...CommandKind[]];
export type { CommandKind };

export const OUTCOME_STATUSES = [
  'applied',
  'already_applied',
  'rejected',
  'exhausted',
  'unverified',
] as const;
export type OutcomeStatus = (typeof OUTCOME_STATUSES)[number];

/** The codes of spec 7.2; the `code` label of rentbridge_commands_refused_total is one of these or `other`. */
export const PARTNER_ERROR_CODES = [
  'validation_error',
  'invalid_request_body',
  'bad_request',
  'unauthenticated',
  'processor_card_error',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'invalid_state_transition',
  'lock_failed',
  'rate_limited',
  'api_error',
  'request_timeout',
] as const;

/** A code as a bounded metric label: a code of spec 7.2, else `other`. */
export function errorCodeLabel(code: string | null | undefined): string {
  return (PARTNER_ERROR_CODES as readonly (string | null | undefined)[]).includes(code) ? code! : 'other';
}

/**
 * A registration refused because another customer holds its e-mail (DESIGN.md, "Sources share one
 * bridge"): one code whatever the platform's wording; `existing_customer_id` names that customer
 * only when the source's own key sees it.
 */
export const EMAIL_IN_USE = 'email_in_use';

/**
 * The last failure of a command that did not succeed: the Partner API's error envelope (spec 7.1)
 * as it came, so a back-office branches on `code` and the stable fields, never on `message`.
 */
export const outcomeErrorSchema = z
  .object({
    code: z
      .union([
        z
          .enum(NO_ANSWER_CODE_LIST)
          .describe(
            `rentbridge's code for a failure without an answer (status null): ${NO_ANSWER_CODE_LIST.map((c) => `${c}: ${NO_ANSWER_CODES[c]}`).join('; ')}`,
          ),
        z.string().describe("the Partner API envelope's code (spec 7.2; unknown codes may appear)"),
        z.null(),
      ])
      .describe(
        "the envelope's code (spec 7.2; unknown codes may appear); `bad_request` when the envelope had none " +
          '(then code_missing is true); for a failure without an answer (status null), one of ' +
          `rentbridge's stable codes: ${NO_ANSWER_CODE_LIST.join(', ')}; refused by rentbridge itself: ` +
          '`invalid_message`, `conflicting_duplicate` (the identity is taken by a command of other content); ' +
          'a registration refused because another customer holds its e-mail: `email_in_use` (status and ' +
          "message the platform's)",
      ),
    status: z.number().int().nullable().describe('the HTTP status; null when no answer came'),
    message: z.string().describe('human-readable; its wording may change, do not branch on it'),
    request_id: z
      .string()
      .nullable()
      .describe("X-Request-Id of the failed call (the answer's, or the one sent when none came)"),
    code_missing: z
      .literal(true)
      .optional()
      .describe('the envelope had no code (a legacy business-rule error)'),
    processor_code: z.string().optional().describe("402 processor_card_error: the payment processor's code"),
    processor_decline_code: z
      .string()
      .optional()
      .describe("402 processor_card_error: the processor's decline reason (insufficient_funds, ...)"),
    errors: z.array(z.string()).optional().describe('validation_error: one string per failing parameter'),
    details: z.record(z.string(), z.unknown()).optional().describe('customers/check: field → reason'),
    error_id: z.string().optional().describe('api_error: unique to the failure'),
    error_signature: z.string().optional().describe('api_error: the same for repeats of one fault'),
    extra: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('other envelope fields (new codes may add some), kept while their JSON is at most 4 KB'),
  })
  .strict()
  .meta({
    examples: [
      {
        code: 'processor_card_error',
        status: 402,
        message: 'Your card was declined.',
        request_id: 'pay-2026-11-0042.a1',
        processor_code: 'card_declined',
        processor_decline_code: 'insufficient_funds',
      },
      {
        code: 'validation_error',
        status: 400,
        message: 'The request is invalid.',
        request_id: 'pay-2026-11-0043.a1',
        errors: ['amount_cents must be a positive integer'],
      },
      {
        code: 'bad_request',
        status: 422,
        message: 'The customer is not eligible.',
        request_id: 'dec-77.a1',
        code_missing: true,
      },
      {
        code: 'api_error',
        status: 500,
        message: 'Something went wrong.',
        request_id: 'pay-2026-11-0044.a3',
        error_id: 'err_7f3a',
        error_signature: 'sig_payments_db',
      },
      {
        code: 'payment_window_closed',
        status: 409,
        message: 'The reporting window for this period is closed.',
        request_id: 'pay-2026-11-0045.a1',
        extra: { window_closed_at: '2026-11-05T00:00:00Z' },
      },
    ],
  });
export type OutcomeErrorShape = z.infer<typeof outcomeErrorSchema>;

export const commandOutcomeSchema = z
  .object({
    command_id: z
      .string()
      .min(1)
      .describe('decision_id, payment_id, registration_id or enrollment_request_id, as the command gave it'),
    command_source: z
      .string()
      .describe(
        "the command's source: the PMS source of a webhook's command (`acme`), else the command's " +
          'CloudEvent source attribute; with command_type and command_id, the identity of the command ' +
          '(also the CloudEvent extension `commandsource`)',
      ),
    command_type: z.enum(COMMAND_KINDS).describe('also the CloudEvent extension `commandtype`'),
    target_id: z
      .string()
      .min(1)
      .describe(
        'application_id, enrollment_id, the lower-cased e-mail (registration) or customer_id (enrollment)',
      ),
    status: z
      .enum(OUTCOME_STATUSES)
      .describe(
        'applied / already_applied: the effect is in place; rejected: the partner refused it; ' +
          'exhausted: retries ran out, proven not applied; unverified: could not tell, parked for ops',
      ),
    attempts: z.number().int().nonnegative().describe('writes sent to the Partner API'),
    partner_request_ids: z.array(z.string()).describe('X-Request-Id of every write, in order'),
    error: outcomeErrorSchema.optional().describe('the last failure, when the command did not succeed'),
    // Onboarding commands (customer_registration, enrollment): the ids the PMS maps its tenant to.
    pms_reference: z.string().optional().describe("the PMS's own id of the tenant, as the command gave it"),
    partner_customer_id: z
      .string()
      .optional()
      .describe('registration: the customer created; enrollment: the customer enrolled'),
    existing_customer_id: z
      .string()
      .optional()
      .describe(
        "registration rejected with error.code email_in_use: the customer holding the e-mail, when the source's own Partner API key sees it (never otherwise)",
      ),
    check_details: z
      .record(z.string(), z.string())
      .optional()
      .describe('registration rejected by POST /customers/check: field → reason, as the API gave them'),
    partner_enrollment_id: z.string().optional().describe('enrollment: the enrollment created'),
    existing_enrollment_id: z
      .string()
      .optional()
      .describe('enrollment rejected because the customer already holds an active one: that enrollment'),
    enrollment_request_id: z
      .string()
      .optional()
      .describe('registration with enroll: the enrollment command it led to (its own outcome follows)'),
    conflicts_with: z
      .object({
        target_id: z.string(),
        status: z.string().describe("the first command's guard state"),
        partner_request_ids: z.array(z.string()),
        first_seen_at: z.string().describe('ISO 8601'),
      })
      .strict()
      .optional()
      .describe(
        'error.code conflicting_duplicate: the command that already holds this identity (same source, ' +
          'type and id, other content); this one was refused and nothing was written',
      ),
  })
  .strict()
  .describe(
    "The data of an outcome CloudEvent. The event's id is `outcome.<request-id base>.<status>`: it names the command and its result (the same outcome published again keeps its id; another result of the same command is a new id), and an outcome callback's webhook-id is this id.",
  );
export type CommandOutcome = z.infer<typeof commandOutcomeSchema>;

/** CloudEvent types of outcomes, by kind (command-contracts.ts). */
export const OUTCOME_TYPES = Object.fromEntries(
  commandContracts().map((c) => [c.kind, c.outcomeType]),
) as Record<CommandKind, string>;

export function isSuccess(status: OutcomeStatus): boolean {
  return status === 'applied' || status === 'already_applied';
}

/**
 * An outcome's CloudEvent id names the command and its result (DESIGN.md, outcome callbacks;
 * docs/decisions/041-outcome-ids-name-the-result.md): `outcome.<request-id base>.<status>`.
 * The same outcome published again (a redelivery, a redrive of a final command) keeps its id; a
 * different result of the same command (`unverified` later redriven to `applied`) is a new event
 * with a new id, so a consumer that drops duplicates by CloudEvents `source` + `id` never drops a
 * result it has not seen. The callbacks' `webhook-id` is this id.
 */
export function outcomeEventId(requestIdBase: string, status: string): string {
  return `outcome.${requestIdBase}.${status}`;
}

/**
 * The id to publish an outcome under: the id it was first published under, across versions. The
 * command's row keeps the outcome and the id it went out under (written before the send); an
 * outcome published again with the same status keeps that id. A row with an outcome but no id was
 * written by 0.1.0, which published every result as `outcome.<base>` (before decision 041): the
 * same result keeps that id, so a consumer that drops duplicates by id sees it once. Another
 * result, or none before, gets outcomeEventId's `outcome.<base>.<status>`.
 */
export function keptOutcomeId(
  requestIdBase: string,
  status: string,
  published: { id: string | null; status: string | null },
): string {
  if (published.status !== status) return outcomeEventId(requestIdBase, status);
  return published.id ?? `outcome.${requestIdBase}`;
}

/**
 * The `webhook-id` of an outcome's callback: its CloudEvent id. An outcome published before ids
 * named their result (`outcome.<base>`, still on the topics until retention ends) gets the status
 * appended, the webhook-id it was delivered under then: a replay is still the same delivery.
 */
export function callbackWebhookId(eventId: string, status: string): string {
  return eventId.endsWith(`.${status}`) ? eventId : `${eventId}.${status}`;
}
