import type { Prisma } from '@prisma/client';
import type { IHeaders, Producer } from 'kafkajs';
import type { Db } from '../db/prisma.js';
import { AppError } from '../errors.js';
import { CLOUDEVENT_CONTENT_TYPE, cloudEventHeaders, parseCloudEvent } from '../events/cloudevent.js';
import { topicName } from '../kafka/topics.js';
import type { Logger } from '../logger.js';
import { deadLetterTarget, writeAudit } from './audit-repository.js';
import { describeIdentity, UNKNOWN_SOURCE, type CommandIdentity } from '../events/command-identity.js';
import {
  buildCorrectedValue,
  commandOfValue,
  CorrectionError,
  letterIdentity,
} from './command-correction.js';
import { DLQ_HEADER, REDRIVE_HEADER } from './dead-letter-headers.js';
import type { DeadLetterState } from './dead-letter-filters.js';
import { lockDeadLetter, resolveDeadLetter, type DeadLetter } from './dead-letter-repository.js';
import {
  APPLIED_STATES,
  resetGuardRow,
  resetStateFor,
  getGuardState,
  RESETTABLE_STATES,
  type GuardStateView,
} from './guard-state-repository.js';

/**
 * Safe redrive, the one implementation behind `rentbridge dlq redrive` and the ops API.
 *
 * For each letter, inside one transaction that locks the letter's row:
 * 1. a letter that is not `open` is skipped (unless `force`);
 * 2. the guard is asked: a command already `applied`/`already_applied` closes the letter as
 *    `closed_applied` and nothing is sent;
 * 3. a correction is validated (CloudEvent + the command's schema, same command id) and kept in
 *    `corrected_value` beside the original;
 * 4. a guard row in a final not-applied state is put back so the consumer tries again: rejected
 *    and exhausted → `pending`, unverified → `in_flight` (the guard reads back before any write);
 *    the row as it was goes into the audit details (docs/decisions/008-redrive-resets-the-guard-row.md);
 * 5. the letter becomes `redriven` and the audit rows are written; the transaction commits;
 * 6. only then is the value republished to the original topic, with the original key and headers
 *    plus the redrive headers. Sending before the commit would race the consumer: it could read
 *    the guard row still final and republish the old outcome instead of retrying. If the send
 *    fails, the letter is put back (audit `redrive_failed`) and the error is thrown.
 */

export interface RedriveDeps {
  db: Db;
  producer: Producer;
  /** KAFKA_TOPIC_PREFIX, added to an original topic header written without it. */
  topicPrefix: string;
  logger: Logger;
}

export type RedriveAction = 'send' | 'close_applied' | 'skip' | 'invalid' | 'not_found';

export interface RedriveOutcome {
  id: number;
  action: RedriveAction;
  /** True when nothing was changed (dry run). */
  dryRun: boolean;
  message: string;
  topic?: string;
  commandId?: string | null;
  /** The identity of the command the letter holds (source + type + id), when readable. */
  command?: CommandIdentity | null;
  guardState?: string | null;
  /** Whether the guard's row was (or would be) reset so that the consumer tries again. */
  guardReset?: boolean;
}

export interface RedriveOptions {
  actor: string;
  reason?: string | null;
  dryRun?: boolean;
  /** Redrive a letter that is no longer open (already redriven, discarded, ...). */
  force?: boolean;
  /** A corrected CloudEvent, or only the corrected command (the event's `data`). */
  correction?: unknown;
}

/** The topic to republish to: the original topic header, prefixed when written without it. */
export function redriveTopic(letter: DeadLetter, topicPrefix: string): string | null {
  const original = letter.originalTopic;
  if (!original) return null;
  return topicPrefix && original.startsWith(topicPrefix) ? original : topicName(topicPrefix, original);
}

function redriveHeaders(letter: DeadLetter, actor: string, at: Date, value: string): IHeaders {
  const headers: IHeaders = {};
  // The original message's own headers travel on (the trail: webhook-id, request-id); the
  // dead-letter ones describe the failure, not the command, and a consumer must not mistake a
  // redrive for a dead letter.
  for (const [name, value] of Object.entries(letter.headers)) {
    if (name.startsWith('dlq-') || name.startsWith('redrive-')) continue;
    headers[name] = value;
  }
  // The CloudEvents binding describes the value sent, which a correction may have changed.
  try {
    Object.assign(headers, cloudEventHeaders(parseCloudEvent(value)));
  } catch {
    headers['content-type'] ??= CLOUDEVENT_CONTENT_TYPE;
  }
  headers[REDRIVE_HEADER.redrivenFrom] = String(letter.id);
  headers[REDRIVE_HEADER.redrivenAt] = at.toISOString();
  headers[REDRIVE_HEADER.redrivenBy] = actor;
  return headers;
}

/**
 * The guard row of an identity; else, for a letter written before identities, the row of unknown
 * source with the same type and id (the same command, recorded before its source was kept).
 */
async function findGuardState(
  db: Db | Prisma.TransactionClient,
  identity: CommandIdentity,
): Promise<{ identity: CommandIdentity; guard: GuardStateView } | null> {
  for (const candidate of [identity, { ...identity, source: UNKNOWN_SOURCE }]) {
    const guard = await getGuardState(db, candidate);
    if (guard) return { identity: candidate, guard };
  }
  return null;
}

/** The guard row of the command a dead letter holds (for `dlq show` and the console). */
export async function letterGuardState(
  db: Db,
  letter: DeadLetter,
  topicPrefix: string,
): Promise<GuardStateView | null> {
  const identity = letterIdentity(letter, topicPrefix);
  return identity ? ((await findGuardState(db, identity))?.guard ?? null) : null;
}

export async function redriveDeadLetter(
  deps: RedriveDeps,
  id: number,
  options: RedriveOptions,
): Promise<RedriveOutcome> {
  const dryRun = options.dryRun ?? false;
  const log = deps.logger.child({ component: 'redrive', deadLetterId: id, actor: options.actor });
  const planned = await deps.db.$transaction(
    async (tx): Promise<RedriveOutcome | PlannedSend> => {
      const letter = await lockDeadLetter(tx, id);
      if (!letter) return { id, action: 'not_found', dryRun, message: `no dead letter ${id}` };
      const topic = redriveTopic(letter, deps.topicPrefix);
      // The guard row is the one of the letter's identity, never another command's that shares
      // its id (another source's, another type's).
      const identity = letterIdentity(letter, deps.topicPrefix);
      const commandId = identity?.commandId ?? letter.commandId;
      const base = { id, dryRun, topic: topic ?? undefined, commandId, command: identity };

      if (letter.state !== 'open' && !options.force) {
        return { ...base, action: 'skip', message: `letter is ${letter.state}, not open` };
      }
      if (!topic) {
        return { ...base, action: 'skip', message: `letter has no ${DLQ_HEADER.originalTopic} header` };
      }

      if (letter.reason === 'conflicting_duplicate') {
        // Its identity belongs to another command (other content): sent again it would be refused
        // again, and a correction keeps the identity. It needs an id of its own from its sender.
        return {
          ...base,
          action: 'skip',
          message:
            'a conflicting duplicate cannot be redriven: its identity belongs to another command; ' +
            'have its sender send it under an id of its own, then discard this letter',
        };
      }
      const found = identity ? await findGuardState(tx, identity) : null;
      const guard = found?.guard ?? null;
      const guardIdentity = found?.identity ?? null;
      if (guard && (APPLIED_STATES as readonly string[]).includes(guard.state)) {
        const message = `command ${describeIdentity(identity!)} is already ${guard.state}: letter closed, nothing sent`;
        if (!dryRun) {
          await resolveDeadLetter(tx, id, {
            state: 'closed_applied',
            by: options.actor,
            resolution: message,
          });
          await writeAudit(tx, {
            actor: options.actor,
            action: 'close_applied',
            target: deadLetterTarget(id),
            reason: options.reason,
            details: {
              commandId,
              commandSource: identity?.source,
              commandType: identity?.commandType,
              guardState: guard.state,
            },
          });
          log.info({ commandId, guardState: guard.state }, 'dead letter closed: command already applied');
        }
        return { ...base, action: 'close_applied', guardState: guard.state, message };
      }

      let value = letter.value;
      let correctedValue: string | null = null;
      if (options.correction !== undefined) {
        try {
          correctedValue = buildCorrectedValue({
            originalValue: letter.value,
            originalTopic: letter.originalTopic,
            commandId,
            correction: options.correction,
            topicPrefix: deps.topicPrefix,
          });
        } catch (error) {
          if (error instanceof CorrectionError) {
            return { ...base, action: 'invalid', guardState: guard?.state ?? null, message: error.message };
          }
          throw error;
        }
        value = correctedValue;
      }

      const guardReset = guard != null && (RESETTABLE_STATES as readonly string[]).includes(guard.state);
      const what = `${correctedValue ? 'corrected value' : 'original value'} to ${topic}`;
      const resetTo = guardReset ? resetStateFor(guard.state, guard.hasSnapshot) : null;
      const message = guardReset ? `send ${what} (guard row ${guard.state} → ${resetTo})` : `send ${what}`;
      if (dryRun) return { ...base, action: 'send', guardState: guard?.state ?? null, guardReset, message };

      const corrected = correctedValue
        ? commandOfValue(correctedValue, letter.originalTopic, deps.topicPrefix)
        : null;
      if (
        guardReset &&
        guardIdentity &&
        !(await resetGuardRow(
          tx,
          guardIdentity,
          guard.state,
          corrected ? { payload: corrected.data as never, targetId: corrected.targetId } : undefined,
        ))
      ) {
        // The consumer moved the row meanwhile: let the operator look again rather than guess.
        return {
          ...base,
          action: 'skip',
          guardState: guard.state,
          message: 'guard row changed meanwhile: retry',
        };
      }
      await resolveDeadLetter(tx, id, {
        state: 'redriven',
        by: options.actor,
        resolution: message,
        ...(correctedValue ? { correctedValue } : {}),
      });
      if (correctedValue) {
        await writeAudit(tx, {
          actor: options.actor,
          action: 'correct',
          target: deadLetterTarget(id),
          reason: options.reason,
          details: { original: letter.value, corrected: correctedValue },
        });
      }
      await writeAudit(tx, {
        actor: options.actor,
        action: 'redrive',
        target: deadLetterTarget(id),
        reason: options.reason,
        details: {
          topic,
          commandId,
          commandSource: identity?.source,
          commandType: identity?.commandType,
          corrected: correctedValue != null,
          // The guard row as it was before the reset (its attempts stay in command_attempts too).
          ...(guardReset ? { guardRowReset: { ...guard, resetTo } } : { guardState: guard?.state ?? null }),
        },
      });
      return {
        outcome: { ...base, action: 'send', guardState: guard?.state ?? null, guardReset, message },
        previousState: letter.state,
        message: {
          topic,
          key: letter.headers[DLQ_HEADER.originalKey] ?? letter.key,
          value,
          headers: redriveHeaders(letter, options.actor, new Date(), value),
        },
      };
    },
    { timeout: 30_000, maxWait: 10_000 },
  );
  if (!('previousState' in planned)) return planned;

  // Sent only after the commit: the consumer must find the guard row already reset, or it would
  // take the redrive for a redelivery of a final command and do nothing.
  const { outcome, message } = planned;
  try {
    await deps.producer.send({
      topic: message.topic,
      messages: [{ key: message.key, value: message.value, headers: message.headers }],
    });
  } catch (error) {
    // Nothing reached Kafka: the letter goes back to its state so it can be redriven again (a
    // guard row reset to pending/in_flight is harmless without a message).
    await deps.db.$transaction(async (tx) => {
      await resolveDeadLetter(tx, id, {
        state: planned.previousState,
        by: options.actor,
        resolution: `redrive failed: ${(error as Error).message}`,
      });
      await writeAudit(tx, {
        actor: options.actor,
        action: 'redrive_failed',
        target: deadLetterTarget(id),
        reason: options.reason,
        details: { topic: message.topic, error: (error as Error).message },
      });
    });
    log.error({ err: error, topic: message.topic }, 'redrive send failed: letter reopened');
    throw error;
  }
  log.info(
    { topic: message.topic, commandId: outcome.commandId, guardReset: outcome.guardReset },
    'dead letter redriven',
  );
  return outcome;
}

interface PlannedSend {
  outcome: RedriveOutcome;
  previousState: DeadLetterState;
  message: { topic: string; key: string | null; value: string; headers: IHeaders };
}

export interface DiscardOutcome {
  id: number;
  action: 'discarded' | 'skip' | 'not_found';
  message: string;
}

/** Closes an open letter without redriving it; the reason is required and audited. */
export async function discardDeadLetter(
  deps: { db: Db },
  id: number,
  options: { actor: string; reason: string },
): Promise<DiscardOutcome> {
  const reason = options.reason.trim();
  if (!reason) throw new AppError(400, 'invalid_request', 'a reason is required to discard a dead letter');
  return deps.db.$transaction(async (tx) => {
    const letter = await lockDeadLetter(tx, id);
    if (!letter) return { id, action: 'not_found', message: `no dead letter ${id}` };
    if (letter.state !== 'open')
      return { id, action: 'skip', message: `letter is ${letter.state}, not open` };
    await resolveDeadLetter(tx, id, { state: 'discarded', by: options.actor, resolution: reason });
    await writeAudit(tx, {
      actor: options.actor,
      action: 'discard',
      target: deadLetterTarget(id),
      reason,
      details: { commandId: letter.commandId, reason: letter.reason, errorCode: letter.errorCode },
    });
    return { id, action: 'discarded', message: 'discarded' };
  });
}
