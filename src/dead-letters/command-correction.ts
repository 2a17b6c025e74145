import type { z } from 'zod';
import { cloudEventSchema } from '../events/cloudevent.js';
import { commandSourceOf, type CommandIdentity } from '../events/command-identity.js';
import type { CommandKind } from '../events/outcomes.js';
import {
  applicationDecisionCommandSchema,
  customerRegistrationCommandSchema,
  enrollmentCommandSchema,
  rentalPaymentCommandSchema,
} from '../events/commands.js';
import { logicalTopic, TOPICS } from '../kafka/topics.js';
import { describeIssues } from './dead-letter-filters.js';

/** The command schema, id field, target field and type of each command topic (logical names). */
const COMMAND_SCHEMAS: Record<
  string,
  {
    schema: z.ZodType;
    idField: string;
    targetOf: (data: Record<string, unknown>) => unknown;
    kind: CommandKind;
  }
> = {
  [TOPICS.applicationDecisions]: {
    schema: applicationDecisionCommandSchema,
    idField: 'decision_id',
    targetOf: (d) => d.application_id,
    kind: 'application_decision',
  },
  [TOPICS.rentalPayments]: {
    schema: rentalPaymentCommandSchema,
    idField: 'payment_id',
    targetOf: (d) => d.enrollment_id,
    kind: 'rental_payment',
  },
  [TOPICS.customerRegistrations]: {
    schema: customerRegistrationCommandSchema,
    idField: 'registration_id',
    targetOf: (d) => (typeof d.email === 'string' ? d.email.toLowerCase() : undefined),
    kind: 'customer_registration',
  },
  [TOPICS.enrollments]: {
    schema: enrollmentCommandSchema,
    idField: 'enrollment_request_id',
    targetOf: (d) => d.customer_id,
    kind: 'enrollment',
  },
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
 * The identity of the command a dead letter holds: from its `dlq-command-*` headers, else (a
 * letter written before identities) from its value's CloudEvent source and its original topic.
 * Null when the letter holds no readable command.
 */
export function letterIdentity(
  letter: {
    commandId: string | null;
    commandSource: string | null;
    commandType: string | null;
    value: string;
    originalTopic: string | null;
  },
  topicPrefix: string,
): CommandIdentity | null {
  const entry = letter.originalTopic
    ? COMMAND_SCHEMAS[logicalTopic(topicPrefix, letter.originalTopic)]
    : undefined;
  const commandId = letter.commandId ?? commandIdOf(letter.value, letter.originalTopic, topicPrefix);
  const commandType = (letter.commandType ?? entry?.kind) as CommandKind | undefined;
  let source = letter.commandSource;
  if (source == null) {
    const ceSource = (parseJson(letter.value) as { source?: unknown } | undefined)?.source;
    source = typeof ceSource === 'string' && ceSource !== '' ? commandSourceOf(ceSource) : null;
  }
  return commandId && commandType && source != null ? { source, commandType, commandId } : null;
}

/** The command (the CloudEvent's `data`) and its target in a message value of a command topic. */
export function commandOfValue(
  value: string,
  originalTopic: string | null,
  topicPrefix: string,
): { data: Record<string, unknown>; targetId: string } | null {
  const entry = originalTopic ? COMMAND_SCHEMAS[logicalTopic(topicPrefix, originalTopic)] : undefined;
  const parsed = entry
    ? entry.schema.safeParse((parseJson(value) as { data?: unknown } | undefined)?.data)
    : null;
  if (!entry || !parsed?.success) return null;
  const data = parsed.data as Record<string, unknown>;
  const target = entry.targetOf(data);
  return typeof target === 'string' || typeof target === 'number' ? { data, targetId: String(target) } : null;
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
  // The source is part of the identity the guard checked: a correction keeps it too.
  const original = parseJson(options.originalValue) as { source?: unknown } | undefined;
  if (typeof original?.source === 'string' && envelope.data.source !== original.source) {
    throw new CorrectionError(
      `a correction must keep the CloudEvent source "${original.source}" (got "${envelope.data.source}")`,
    );
  }
  return JSON.stringify(event);
}
