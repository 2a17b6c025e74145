import type { TopicMessages } from 'kafkajs';
import type { Completion } from '../command-types/command-type.js';
import { DEAD_LETTER_REASONS, REDRIVE_HEADER } from '../dead-letters/dead-letter-headers.js';
import { describeIdentity, escapeId, type CommandIdentity } from '../contracts/command-contracts.js';
import { keptOutcomeId, errorCodeLabel } from '../contracts/outcomes.js';
import type { CommandRecord, CommandRepository } from '../guard/index.js';
import type { SharedProducer } from '../kafka/shared-producer.js';
import type { Logger } from '../logger.js';
import type { OutcomeError } from '../partner/errors.js';
import { metrics } from '../metrics.js';
import { traceContextFor, traceOutcome } from '../telemetry.js';
import {
  deadLetterEvent,
  followUpEvent,
  headerValue,
  outcomeEvent,
  outsideScope,
  refusedOutcome,
  toOutcome,
  trailOf,
  type Acting,
  type Destinations,
  type Origin,
} from './outcome-events.js';

export interface ResultPublisherDeps {
  dest: Destinations;
  producer: SharedProducer;
  repository: CommandRepository;
  logger: Logger;
}

/**
 * Publishes what a command ends in, in ONE batch before its offset is committed: its outcome, the
 * commands that follow from it, and (unless it succeeded) its dead letter.
 */
export function createResultPublisher({ dest, producer, repository, logger }: ResultPublisherDeps) {
  const { type } = dest;
  // With the other commands' results that wait meanwhile, in one request (SharedProducer.send).
  const send = (batches: TopicMessages[]) => producer.send(batches);

  /** The dead letter of a final command that did not succeed; null when none is due. */
  function finalDeadLetter(
    origin: Origin,
    record: CommandRecord,
    redelivered: boolean,
    acting: Acting,
    partnerError: OutcomeError | null,
  ) {
    const reason = DEAD_LETTER_REASONS.find((r) => r === record.state);
    // A redriven command that is final again is not dead-lettered again (no redrive loop); a
    // plain redelivery is, because the first dead letter may not have reached Kafka.
    const redriven = headerValue(origin.message.headers, REDRIVE_HEADER.redrivenFrom) !== undefined;
    if (!reason || (redelivered && redriven)) return null;
    const failedAt = (iso: string | undefined) => (iso ? new Date(iso) : (record.finishedAt ?? new Date()));
    const scope = acting.key === 'own' ? outsideScope(record, acting.source) : null;
    const letter = deadLetterEvent(dest, origin, reason, {
      commandId: record.commandId,
      commandSource: record.source,
      error: scope && record.lastError ? { ...record.lastError, message: scope } : record.lastError,
      partnerError,
      attempts: record.attempts,
      firstFailureAt: failedAt(record.lastError?.first_failure_at),
      lastFailureAt: failedAt(record.lastError?.last_failure_at),
      partnerRequestIds: record.requestIds,
    });
    return { letter, reason };
  }

  /** A final command: its outcome (again, when it was final already), follow-ups, dead letter. */
  async function publishResult(
    origin: Origin,
    record: CommandRecord,
    redelivered: boolean,
    completion: Completion,
    acting: Acting,
  ) {
    const outcome = { ...toOutcome(type.kind, record), ...completion.fields };
    const identity = { source: record.source, commandType: type.kind, commandId: record.commandId };
    // Inside the outcome's span, so the trace context the messages carry is that span's.
    await traceOutcome(identity, record.state, async () => {
      const traceContext = traceContextFor(origin.message.headers);
      // Names the command and its result (DESIGN.md, outcome callbacks; decision 041): the same
      // outcome published again keeps its id, another result of the command is a new event. One
      // first published by 0.1.0 under `outcome.<base>` keeps that id (keptOutcomeId).
      const published = await repository.publishedOutcome(identity);
      const outcomeId = keptOutcomeId(record.requestIdBase, record.state, published);
      const trail = trailOf(origin);
      const sentOutcome = outcomeEvent(dest, outcomeId, outcome, trail, traceContext);
      const cause = { commandId: record.commandId, ceSource: acting.ceSource };
      const batches: TopicMessages[] = [
        { topic: dest.outcomeTopic, messages: [sentOutcome] },
        ...(completion.followUps ?? []).map((next) => followUpEvent(dest, next, cause, trail, traceContext)),
      ];
      const dead = finalDeadLetter(origin, record, redelivered, acting, outcome.error ?? null);
      if (dead) {
        batches.unshift(dead.letter);
        metrics.deadLetters.inc({ topic: type.topic, reason: dead.reason });
      }
      // Kept for the PMS status endpoint (GET /pms/:source/commands/:id): the same outcome as on Kafka.
      await repository.recordOutcome(identity, outcome, outcomeId);
      const landed = (await send(batches)).get(sentOutcome);
      // Where the outcome landed, for the trace. Not awaited: the outcome is on Kafka already, and a
      // lost note costs only that line of the trace.
      if (landed)
        void repository
          .logRead(identity, {
            attempt: record.attempts,
            requestId: outcomeId,
            kind: 'outcome',
            result: 'published',
            message: `${type.outcomeTopic}[${landed.partition}]@${landed.offset}`,
          })
          .catch((error: unknown) => logger.debug({ err: error }, 'outcome position not kept'));
    });
    // Counted once per command: a redelivered final command was counted when it became final.
    if (record.state === 'rejected' && !redelivered)
      metrics.commandsRefused.inc({ command: type.kind, code: errorCodeLabel(outcome.error?.code) });
  }

  /**
   * Same identity, other content: refused as `conflicting_duplicate`, never taken for the first
   * command and never written. The outcome (`rejected`) is this command's own: its target, and a
   * CloudEvent id of its own (the message's place), so it never replaces the first's outcome; the
   * dead letter holds this message and names both.
   */
  async function publishConflict(
    origin: Origin,
    identity: CommandIdentity,
    targetId: string,
    existing: CommandRecord,
  ) {
    const now = new Date();
    const message =
      `${describeIdentity(identity)} was already received with other content ` +
      `(target ${escapeId(existing.targetId)}, ${existing.state}, first seen ${existing.createdAt.toISOString()}, ` +
      `request ids ${existing.requestIdBase}.*); this one (target ${escapeId(targetId)}) is refused, ` +
      'nothing written: send it under an id of its own';
    const error = { code: 'conflicting_duplicate', status: null, message };
    const outcome = refusedOutcome({
      kind: type.kind,
      commandId: identity.commandId,
      source: identity.source,
      targetId,
      error,
      conflictsWith: {
        target_id: existing.targetId,
        status: existing.state,
        partner_request_ids: existing.requestIds,
        first_seen_at: existing.createdAt.toISOString(),
      },
    });
    const outcomeId = `outcome.${existing.requestIdBase}.conflict.${origin.partition}-${origin.message.offset}`;
    const traceContext = traceContextFor(origin.message.headers);
    await send([
      deadLetterEvent(dest, origin, 'conflicting_duplicate', {
        commandId: identity.commandId,
        commandSource: identity.source,
        error,
        attempts: 0,
        firstFailureAt: now,
        lastFailureAt: now,
        partnerRequestIds: [],
      }),
      {
        topic: dest.outcomeTopic,
        messages: [outcomeEvent(dest, outcomeId, outcome, trailOf(origin), traceContext)],
      },
    ]);
    metrics.deadLetters.inc({ topic: type.topic, reason: 'conflicting_duplicate' });
    metrics.commandsRefused.inc({ command: type.kind, code: 'other' });
  }

  return { publishResult, publishConflict, send };
}

export type ResultPublisher = ReturnType<typeof createResultPublisher>;
