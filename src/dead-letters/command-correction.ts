import {
  contractOfPhysicalTopic,
  looseIdsOf,
  commandSourceOf,
  type CommandIdentity,
} from '../contracts/command-contracts.js';
import { cloudEventSchema } from '../contracts/cloudevent.js';
import { changedFieldDigests, holdsMask } from '../personal-data.js';
import { describeIssues } from './dead-letter-filters.js';

/**
 * A command in a dead letter's value, read through the list of command types
 * (src/command-types/command-types.ts): the row of the letter's original topic says the command's
 * schema, id field and target.
 */

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

/**
 * What a correction's audit entry keeps (decision 052): the fields the corrected value changed,
 * each old and new value as a digest, never the values (a tenant's personal data).
 */
export function correctionAuditDetails(originalValue: string, correctedValue: string) {
  const read = (text: string) => parseJson(text) ?? text;
  return { changed: changedFieldDigests(read(originalValue), read(correctedValue)) };
}

/** The command id in a message value (the `data` of its CloudEvent), when there is one. */
export function commandIdOf(value: string, originalTopic: string | null, topicPrefix: string): string | null {
  const type = contractOfPhysicalTopic(originalTopic, topicPrefix);
  const event = parseJson(value) as { data?: unknown } | undefined;
  const data = event?.data;
  if (!type || data === null || typeof data !== 'object' || Array.isArray(data)) return null;
  return looseIdsOf(type, data as Record<string, unknown>).commandId;
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
  const type = contractOfPhysicalTopic(letter.originalTopic, topicPrefix);
  const commandId = letter.commandId ?? commandIdOf(letter.value, letter.originalTopic, topicPrefix);
  const commandType = (letter.commandType ?? type?.kind) as CommandIdentity['commandType'] | undefined;
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
  const type = contractOfPhysicalTopic(originalTopic, topicPrefix);
  const parsed = type
    ? type.schema.safeParse((parseJson(value) as { data?: unknown } | undefined)?.data)
    : null;
  if (!type || !parsed?.success) return null;
  const data = parsed.data as Record<string, unknown>;
  const { targetId } = looseIdsOf(type, data);
  return targetId != null ? { data, targetId } : null;
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
  // A correction copied from a masked view would write `J.` over a tenant's name (decision 052).
  if (holdsMask(JSON.stringify(correction))) {
    throw new CorrectionError(
      'the correction holds masked values (•••): reveal the letter first (POST /ops/api/reveal, dlq show --reveal)',
    );
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

  const type = contractOfPhysicalTopic(options.originalTopic, options.topicPrefix);
  if (!type) throw new CorrectionError(`no command schema for topic ${options.originalTopic ?? '(unknown)'}`);
  const data = type.schema.safeParse(envelope.data.data);
  if (!data.success)
    throw new CorrectionError(`invalid ${type.topic} command: ${describeIssues(data.error)}`);
  const newId = (envelope.data.data as Record<string, unknown>)[type.idField];
  if (options.commandId && newId !== options.commandId) {
    throw new CorrectionError(
      `a correction must keep ${type.idField} "${options.commandId}" (got "${String(newId)}")`,
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
