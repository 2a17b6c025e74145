import { COMMAND_TYPES, enrollmentCommandSchema, type EnrollmentCommand } from '../events/commands.js';
import { isSuccess, type CommandOutcome } from '../events/outcomes.js';
import { enrollmentOf, enrollmentReadBack, findNewest } from '../guard/index.js';
import { TOPICS } from '../kafka/topics.js';
import {
  createCommandConsumer,
  type CommandConsumerDeps,
  type CommandSpec,
  type Completion,
  type StepTools,
} from './command-runner.js';

/**
 * Once final: the enrollment created (the customer's active enrollment, newest first), or the
 * one that made the Partner API refuse a second (spec 3).
 */
async function complete(
  command: EnrollmentCommand,
  record: Parameters<NonNullable<CommandSpec<EnrollmentCommand>['complete']>>[1],
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

/** Enrolls customers from commands.enrollments (one active enrollment per customer, spec 3). */
export const enrollments: CommandSpec<EnrollmentCommand> = {
  name: 'enrollments',
  kind: 'enrollment',
  topic: TOPICS.enrollments,
  outcomeTopic: TOPICS.enrollmentOutcomes,
  eventType: COMMAND_TYPES.enrollment,
  schema: enrollmentCommandSchema,
  commandId: (c) => c.enrollment_request_id,
  targetId: (c) => c.customer_id,
  readBack: enrollmentReadBack,
  complete,
};

export function createEnrollmentsConsumer(deps: CommandConsumerDeps) {
  return createCommandConsumer(enrollments, deps);
}
