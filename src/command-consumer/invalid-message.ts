import type { TopicMessages } from 'kafkajs';
import {
  commandContracts,
  contractOfEvent,
  looseIdsOf,
  type AnyCommandContract,
} from '../contracts/command-contracts.js';
import { parseCloudEvent } from '../contracts/cloudevent.js';
import { commandSourceOf } from '../contracts/command-identity.js';
import { preferredRequestIdBase } from '../guard/index.js';
import { traceContextFor } from '../telemetry/telemetry.js';
import { deadLetterEvent, outcomeEvent, refusedOutcome } from './outcome-events.js';
import type { Destinations, Origin } from './outcome-events.js';

/**
 * A message on a command topic that is not a command of the topic's type: not JSON, not a
 * CloudEvent, another CloudEvent type, or data that fails the schema. Never retried (the same
 * bytes fail the same way: no crash loop on a poison message); dead-lettered as `invalid_message`
 * and, when its id can be read, answered with a `rejected` outcome.
 */

/** A message read as a command of the consumer's type, or why it is not one. */
export type ParsedMessage<C> =
  { ok: true; command: C; eventId: string; ceSource: string } | { ok: false; error: unknown };

export function parseCommandMessage<C>(type: AnyCommandContract, origin: Origin): ParsedMessage<C> {
  try {
    const event = parseCloudEvent(origin.message.value);
    if (event.type !== type.eventType) {
      throw new TypeError(`CloudEvent type "${event.type}" is not "${type.eventType}"`);
    }
    return {
      ok: true,
      command: type.schema.parse(event.data) as C,
      eventId: event.id,
      ceSource: event.source,
    };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * Best effort, from the list of command types: the source, id and target of a message that failed its
 * type or schema. The fields are read as the row of the message's own CloudEvent type declares
 * them (a command sent to the wrong topic), else the topic's row, else any row's.
 */
export function guessCommand(
  topicType: AnyCommandContract,
  value: Buffer | null,
): { source: string | null; commandId: string | null; targetId: string | null } {
  let event: { source?: unknown; type?: unknown; data?: unknown };
  try {
    event = JSON.parse(value?.toString() ?? '') as typeof event;
  } catch {
    return { source: null, commandId: null, targetId: null };
  }
  const source =
    typeof event?.source === 'string' && event.source !== '' ? commandSourceOf(event.source) : null;
  const data = event?.data;
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    return { source, commandId: null, targetId: null };
  const own = typeof event.type === 'string' ? contractOfEvent(event.type) : undefined;
  const rows = [...new Set([own, topicType, ...commandContracts()].filter((t) => t !== undefined))];
  for (const row of rows) {
    const ids = looseIdsOf(row, data as Record<string, unknown>);
    if (ids.commandId) return { source, ...ids };
  }
  return { source, commandId: null, targetId: null };
}

/** The dead letter of an invalid message and, when its command id can be read, its outcome. */
export function invalidMessageBatches(dest: Destinations, origin: Origin, error: unknown): TopicMessages[] {
  const now = new Date();
  const message = (error as Error).message ?? String(error);
  const loose = guessCommand(dest.type, origin.message.value);
  const batches: TopicMessages[] = [
    deadLetterEvent(dest, origin, 'invalid_message', {
      commandId: loose.commandId,
      commandSource: loose.source,
      error: { code: 'invalid_message', status: null, message },
      attempts: 0,
      firstFailureAt: now,
      lastFailureAt: now,
      partnerRequestIds: [],
    }),
  ];
  if (!loose.commandId) return batches;
  // Every command is promised an outcome: when its id can be read (an unknown CloudEvent type,
  // a field that fails the schema), a rejected one goes with the dead letter. Its CloudEvent id
  // names the message, so a valid command with the same id later keeps an outcome id of its own.
  const outcome = refusedOutcome({
    kind: dest.type.kind,
    commandId: loose.commandId,
    source: loose.source ?? '',
    targetId: loose.targetId ?? origin.message.key?.toString() ?? loose.commandId,
    error: { code: 'invalid_message', message },
  });
  const base = preferredRequestIdBase({
    source: outcome.command_source,
    commandType: dest.type.kind,
    commandId: loose.commandId,
  });
  const id = `outcome.${base}.invalid.${origin.partition}-${origin.message.offset}`;
  const traceContext = traceContextFor(origin.message.headers);
  batches.push({ topic: dest.outcomeTopic, messages: [outcomeEvent(dest, id, outcome, {}, traceContext)] });
  return batches;
}
