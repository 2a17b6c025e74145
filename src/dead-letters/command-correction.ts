import type { z } from 'zod';
import { cloudEventSchema } from '../events/cloudevent.js';
import {
  applicationDecisionCommandSchema,
  customerRegistrationCommandSchema,
  enrollmentCommandSchema,
  rentalPaymentCommandSchema,
} from '../events/commands.js';
import { logicalTopic, TOPICS } from '../kafka/topics.js';
import { describeIssues } from './dead-letter-filters.js';

/** The command schema and id field of each command topic (logical names). */
const COMMAND_SCHEMAS: Record<string, { schema: z.ZodType; idField: string }> = {
  [TOPICS.applicationDecisions]: { schema: applicationDecisionCommandSchema, idField: 'decision_id' },
  [TOPICS.rentalPayments]: { schema: rentalPaymentCommandSchema, idField: 'payment_id' },
  [TOPICS.customerRegistrations]: { schema: customerRegistrationCommandSchema, idField: 'registration_id' },
  [TOPICS.enrollments]: { schema: enrollmentCommandSchema, idField: 'enrollment_request_id' },
};

export class CorrectionError extends Error {
  override name = 'CorrectionError';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The command id in a message value (the `data` of its CloudEvent), when there is one. */
export function commandIdOf(value: string, originalTopic: string | null, topicPrefix: string): string | null {
  const entry = originalTopic ? COMMAND_SCHEMAS[logicalTopic(topicPrefix, originalTopic)] : undefined;
  const event = parseJson(value) as { data?: Record<string, unknown> } | undefined;
  const id = entry && event?.data ? event.data[entry.idField] : undefined;
  return typeof id === 'string' ? id : null;
}

/**
 * Builds the corrected message value. `correction` is either a whole CloudEvent (it has
 * `specversion`) or only the corrected command, which replaces the original event's `data`.
 * The result must be a valid CloudEvent whose `data` passes the command's schema, and it must
 * keep the command id: the guard's check was made for that id, and a new id would bypass it.
 */
export function buildCorrectedValue(options: {
  originalValue: string;
  originalTopic: string | null;
  commandId: string | null;
  correction: unknown;
  topicPrefix: string;
}): string {
  const { correction } = options;
  if (correction === null || typeof correction !== 'object' || Array.isArray(correction)) {
    throw new CorrectionError('the correction must be a JSON object (a CloudEvent or the command itself)');
  }
  let event: unknown;
  if ('specversion' in correction) {
    event = correction;
  } else {
    const original = parseJson(options.originalValue);
    if (original === null || typeof original !== 'object' || Array.isArray(original)) {
      throw new CorrectionError(
        'the original value is not a JSON object: give the whole corrected CloudEvent (with specversion)',
      );
    }
    event = { ...original, data: correction };
  }
  const envelope = cloudEventSchema.safeParse(event);
  if (!envelope.success)
    throw new CorrectionError(`not a valid CloudEvent: ${describeIssues(envelope.error)}`);

  const logical = options.originalTopic ? logicalTopic(options.topicPrefix, options.originalTopic) : null;
  const entry = logical ? COMMAND_SCHEMAS[logical] : undefined;
  if (!entry)
    throw new CorrectionError(`no command schema for topic ${options.originalTopic ?? '(unknown)'}`);
  const data = entry.schema.safeParse(envelope.data.data);
  if (!data.success) throw new CorrectionError(`invalid ${logical} command: ${describeIssues(data.error)}`);
  const newId = (envelope.data.data as Record<string, unknown>)[entry.idField];
  if (options.commandId && newId !== options.commandId) {
    throw new CorrectionError(
      `a correction must keep ${entry.idField} "${options.commandId}" (got "${String(newId)}")`,
    );
  }
  return JSON.stringify(event);
}
