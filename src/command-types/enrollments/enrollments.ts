import type { EnrollmentCommand } from '../../contracts/commands.js';
import { ENROLLMENT } from '../../contracts/command-contracts.js';
import { isSuccess, type CommandOutcome } from '../../contracts/outcomes.js';
import { findNewest, type CommandRecord } from '../../guard/index.js';
import { enrollmentOf, enrollmentReadBack } from './enrollment-read-back.js';
import type { CommandType, Completion, StepTools } from '../command-type.js';

/**
 * Once final: the enrollment created (the customer's active enrollment, newest first), or the
 * one that made the Partner API refuse a second (spec 3).
 */
async function complete(
  command: EnrollmentCommand,
  record: CommandRecord,
  tools: StepTools,
): Promise<Completion> {
  const fields: Partial<CommandOutcome> = {
    partner_customer_id: command.customer_id,
    ...(command.pms_reference !== undefined && { pms_reference: command.pms_reference }),
  };
  const ctx = { nextReadId: tools.nextRequestId };
  const active = () =>
    findNewest(
      tools.partner,
      'enrollments',
      (r) => enrollmentOf(r, command.customer_id) && r.status === 'active',
      ctx,
    );
  if (isSuccess(record.state as CommandOutcome['status'])) {
    const enrollment = await active();
    if (enrollment) fields.partner_enrollment_id = String(enrollment.id);
  } else if (record.state === 'rejected' && record.lastError?.status === 400) {
    const known = record.snapshot?.existing_enrollment_id;
    const holder = typeof known === 'string' ? known : (await active())?.id;
    if (holder != null) fields.existing_enrollment_id = String(holder);
  }
  return { fields };
}

/** Enrolls customers (one active enrollment per customer, spec 3). */
export const enrollments: CommandType<EnrollmentCommand> = {
  ...ENROLLMENT,
  readBack: enrollmentReadBack,
  complete,
};
