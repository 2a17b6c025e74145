import {
  enrollmentRequestIdOf,
  type CustomerRegistrationCommand,
  type EnrollmentCommand,
} from '../../contracts/commands.js';
import { COMMAND_TYPES, CUSTOMER_REGISTRATION } from '../../contracts/command-contracts.js';
import { EMAIL_IN_USE, isSuccess, type CommandOutcome } from '../../contracts/outcomes.js';
import type { OutcomeError } from '../../partner/errors.js';
import { EMAIL_TAKEN } from '../../partner/assumptions.js';
import { classifyFailure } from '../../guard/machine/guard-machine.js';
import { findNewest, type CommandRecord } from '../../guard/index.js';
import { customerRegistrationReadBack, sameEmail } from './customer-registration-read-back.js';
import { TOPICS } from '../../kafka/topics.js';
import type { CommandCheck, CommandType, Completion, StepTools } from '../command-type.js';

/** The fields of the create input (spec 4.2), which the check takes too (assumptions.ts). */
function customerInput(c: CustomerRegistrationCommand) {
  return { first_name: c.first_name, last_name: c.last_name, email: c.email, phone: c.phone };
}

function reasons(details: unknown): Record<string, string> | undefined {
  if (details === null || typeof details !== 'object' || Array.isArray(details)) return undefined;
  return Object.fromEntries(
    Object.entries(details as Record<string, unknown>).map(([field, reason]) => [
      field,
      typeof reason === 'string' ? reason : JSON.stringify(reason),
    ]),
  );
}

/**
 * Step 1 (optional, `check: true`): `POST /partner/v1/customers/check`, run by the guard before
 * the write (src/guard/machine/guard-machine.ts) unless the row shows it checked already. It has no side
 * effect, so it runs again after a crash until the guard row exists; a refusal ends the
 * registration `rejected`, its `details` kept on the row (and so in every republished outcome).
 * Transient failures (5xx, 429, network) throw: the consumer tries the command again later.
 */
const check: CommandCheck<CustomerRegistrationCommand> = {
  wants: (command) => command.check === true,
  async run(command, tools) {
    try {
      await tools.partner.checkCustomer(customerInput(command), {
        lane: 'write',
        requestId: tools.nextRequestId(),
      });
      return null;
    } catch (error) {
      const failure = classifyFailure(error);
      if (failure.kind !== 'rejected') throw error;
      const details = reasons((error as { details?: unknown }).details);
      return {
        code: failure.code,
        status: failure.status,
        message: failure.message,
        ...(details && { details }),
      };
    }
  },
};

/**
 * Once final: the Partner customer id next to the PMS reference (found by e-mail, newest first:
 * a customer just created is on page 1), the check's details, the customer that already held the
 * e-mail; and with `enroll: true`, the enrollment command (its id derived from the registration,
 * so a republished one is the same command and the guard applies it once).
 */
async function complete(
  command: CustomerRegistrationCommand,
  record: CommandRecord,
  tools: StepTools,
): Promise<Completion> {
  const fields: Partial<CommandOutcome> = { pms_reference: command.pms_reference };
  // A refusal by the check keeps its details on the row (a later success keeps the old error).
  const checkDetails =
    record.state === 'rejected'
      ? reasons((record.lastError as { details?: unknown } | null)?.details)
      : undefined;
  if (checkDetails) return { fields: { ...fields, check_details: checkDetails } };
  const ctx = { nextReadId: tools.nextRequestId };
  if (isSuccess(record.state as CommandOutcome['status'])) {
    const customer = await findNewest(tools.partner, 'customers', (r) => sameEmail(r, command.email), ctx);
    if (!customer) {
      tools.logger.warn('customer created but no longer listed: outcome without its id');
      return { fields };
    }
    const customerId = String(customer.id);
    fields.partner_customer_id = customerId;
    if (!command.enroll) return { fields };
    const enrollment: EnrollmentCommand = {
      enrollment_request_id: enrollmentRequestIdOf(command.registration_id),
      customer_id: customerId,
      pms_reference: command.pms_reference,
      registration_id: command.registration_id,
    };
    fields.enrollment_request_id = enrollment.enrollment_request_id;
    return {
      fields,
      followUps: [
        {
          topic: TOPICS.enrollments,
          key: customerId,
          id: `command.${enrollment.enrollment_request_id}`,
          type: COMMAND_TYPES.enrollment,
          subject: enrollment.enrollment_request_id,
          data: enrollment,
        },
      ],
    };
  }
  if (record.state === 'rejected' && record.lastError?.status != null && record.lastError.status < 500) {
    // Refused (an e-mail already taken, spec 2.2): name the customer holding it only when this
    // source's own key sees it. The snapshot and the read here were made with the key acting for
    // the command's source (src/partner/source-partners.ts), so a customer of another source's
    // owners is never named to this one (issue 51).
    const known = record.snapshot?.existing_customer_id;
    const holder =
      typeof known === 'string'
        ? known
        : (await findNewest(tools.partner, 'customers', (r) => sameEmail(r, command.email), ctx))?.id;
    if (holder != null) fields.existing_customer_id = String(holder);
    if (holder != null || saysEmailTaken(record)) fields.error = emailInUse(record);
  }
  return { fields };
}

/** Whether the platform's refusal of the create says the e-mail is taken (assumptions.ts, EMAIL_TAKEN). */
function saysEmailTaken(record: CommandRecord): boolean {
  const last = record.lastError!;
  const texts = [last.message, last.partner_error?.message ?? '', ...(last.partner_error?.errors ?? [])];
  return texts.some((text) => EMAIL_TAKEN.test(text));
}

/**
 * The outcome's error for a registration whose e-mail another customer holds: `email_in_use`, one
 * code whichever way the platform worded it, with its status, message and request id kept.
 */
function emailInUse(record: CommandRecord): OutcomeError {
  const last = record.lastError!;
  const { code_missing: _missing, ...envelope } = last.partner_error ?? {
    code: last.code,
    status: last.status,
    message: last.message,
    request_id: record.requestIds.at(-1) ?? null,
  };
  return { ...envelope, code: EMAIL_IN_USE };
}

/** Registers customers (spec 4.2): check → create → enroll. */
export const customerRegistrations: CommandType<CustomerRegistrationCommand> = {
  ...CUSTOMER_REGISTRATION,
  readBack: customerRegistrationReadBack,
  check,
  complete,
};
