import type { Prisma } from '@prisma/client';
import type { Producer } from 'kafkajs';
import type { Db } from '../db/prisma.js';
import { describeIdentity, type CommandIdentity } from '../contracts/command-contracts.js';
import type { Logger } from '../logger.js';
import { deadLetterTarget, writeAudit } from './audit-repository.js';
import {
  buildCorrectedValue,
  commandOfValue,
  CorrectionError,
  letterIdentity,
} from './command-correction.js';
import { DLQ_HEADER } from './dead-letter-headers.js';
import type { DeadLetterState } from './dead-letter-filters.js';
import { lockDeadLetter, resolveDeadLetter, type DeadLetter } from './dead-letter-repository.js';
import type { GuardStateView } from './guard-state-repository.js';
import {
  findLetterGuard,
  isApplied,
  redriveResetTo,
  reopenGuardRow,
  type FoundGuard,
} from './redrive-guard.js';
import { redriveMessage, redriveTopic, type RedriveMessage } from './redrive-message.js';

export { discardDeadLetter, type DiscardOutcome } from './discard.js';
export { letterGuardState } from './redrive-guard.js';
export { redriveTopic } from './redrive-message.js';

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

type Tx = Prisma.TransactionClient;

export interface RedriveDeps {
  db: Db;
  /** A producer, or the process's one producer to ask for when a redrive sends (never on a dry run). */
  producer: Pick<Producer, 'send'> | (() => Promise<Pick<Producer, 'send'>>);
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

/** What every step of one redrive knows: the locked letter, where it goes, whose command it is. */
interface RedriveContext {
  id: number;
  letter: DeadLetter;
  options: RedriveOptions;
  dryRun: boolean;
  topic: string | null;
  identity: CommandIdentity | null;
  commandId: string | null;
  /** The fields every outcome of this letter starts with. */
  base: Pick<RedriveOutcome, 'id' | 'dryRun' | 'topic' | 'commandId' | 'command'>;
  log: Logger;
}

function contextOf(
  deps: RedriveDeps,
  letter: DeadLetter,
  options: RedriveOptions,
  log: Logger,
): RedriveContext {
  const dryRun = options.dryRun ?? false;
  const topic = redriveTopic(letter, deps.topicPrefix);
  // The guard row is the one of the letter's identity, never another command's that shares its
  // id (another source's, another type's).
  const identity = letterIdentity(letter, deps.topicPrefix);
  const commandId = identity?.commandId ?? letter.commandId;
  const base = { id: letter.id, dryRun, topic: topic ?? undefined, commandId, command: identity };
  return { id: letter.id, letter, options, dryRun, topic, identity, commandId, base, log };
}

/** Step 1: a letter that cannot be redriven as it is: not open, no topic, a conflicting duplicate. */
function refusal(ctx: RedriveContext): RedriveOutcome | null {
  const { letter, base } = ctx;
  if (letter.state !== 'open' && !ctx.options.force) {
    return { ...base, action: 'skip', message: `letter is ${letter.state}, not open` };
  }
  if (!ctx.topic) {
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
  return null;
}

/** Step 2: the guard says the command is already applied: the letter closes, nothing is sent. */
async function closeApplied(tx: Tx, ctx: RedriveContext, guard: GuardStateView): Promise<RedriveOutcome> {
  const { id, identity, commandId, options } = ctx;
  const message = `command ${describeIdentity(identity!)} is already ${guard.state}: letter closed, nothing sent`;
  if (!ctx.dryRun) {
    await resolveDeadLetter(tx, id, { state: 'closed_applied', by: options.actor, resolution: message });
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
    ctx.log.info({ commandId, guardState: guard.state }, 'dead letter closed: command already applied');
  }
  return { ...ctx.base, action: 'close_applied', guardState: guard.state, message };
}

/** Step 3: the corrected value (validated), or null without a correction; a refused one is `invalid`. */
function correctedValueOf(
  deps: RedriveDeps,
  ctx: RedriveContext,
  guard: GuardStateView | null,
): { correctedValue: string | null } | RedriveOutcome {
  if (ctx.options.correction === undefined) return { correctedValue: null };
  try {
    return {
      correctedValue: buildCorrectedValue({
        originalValue: ctx.letter.value,
        originalTopic: ctx.letter.originalTopic,
        commandId: ctx.commandId,
        correction: ctx.options.correction,
        topicPrefix: deps.topicPrefix,
      }),
    };
  } catch (error) {
    if (!(error instanceof CorrectionError)) throw error;
    return { ...ctx.base, action: 'invalid', guardState: guard?.state ?? null, message: error.message };
  }
}

/** The guard row put back (decision 008), with the corrected command's content when corrected. */
function reopenForRedrive(
  tx: Tx,
  deps: RedriveDeps,
  ctx: RedriveContext,
  found: FoundGuard,
  correctedValue: string | null,
): Promise<boolean> {
  const corrected = correctedValue
    ? commandOfValue(correctedValue, ctx.letter.originalTopic, deps.topicPrefix)
    : null;
  return reopenGuardRow(tx, found, corrected);
}

/** Step 4 (not a dry run): the letter becomes `redriven` and the audit rows are written. */
async function recordRedrive(
  tx: Tx,
  ctx: RedriveContext,
  send: {
    message: string;
    correctedValue: string | null;
    guard: GuardStateView | null;
    resetTo: string | null;
  },
): Promise<void> {
  const { id, options, letter, identity, commandId } = ctx;
  const { correctedValue, guard, resetTo } = send;
  await resolveDeadLetter(tx, id, {
    state: 'redriven',
    by: options.actor,
    resolution: send.message,
    ...(correctedValue ? { correctedValue } : {}),
  });
  const audit = { actor: options.actor, target: deadLetterTarget(id), reason: options.reason };
  if (correctedValue) {
    await writeAudit(tx, {
      ...audit,
      action: 'correct',
      details: { original: letter.value, corrected: correctedValue },
    });
  }
  await writeAudit(tx, {
    ...audit,
    action: 'redrive',
    details: {
      topic: ctx.topic,
      commandId,
      commandSource: identity?.source,
      commandType: identity?.commandType,
      corrected: correctedValue != null,
      // The guard row as it was before the reset (its attempts stay in command_attempts too).
      ...(resetTo ? { guardRowReset: { ...guard, resetTo } } : { guardState: guard?.state ?? null }),
    },
  });
}

/** Steps 1 to 4, inside the transaction that locks the letter: an outcome, or a message to send. */
async function planRedrive(
  tx: Tx,
  deps: RedriveDeps,
  id: number,
  options: RedriveOptions,
  log: Logger,
): Promise<RedriveOutcome | PlannedSend> {
  const letter = await lockDeadLetter(tx, id);
  if (!letter)
    return { id, action: 'not_found', dryRun: options.dryRun ?? false, message: `no dead letter ${id}` };
  const ctx = contextOf(deps, letter, options, log);
  const refused = refusal(ctx);
  if (refused) return refused;
  const found = ctx.identity ? await findLetterGuard(tx, ctx.identity, letter, deps.topicPrefix) : null;
  const guard = found?.guard ?? null;
  if (guard && isApplied(guard)) return closeApplied(tx, ctx, guard);
  const correction = correctedValueOf(deps, ctx, guard);
  if ('action' in correction) return correction;
  const { correctedValue } = correction;

  const resetTo = redriveResetTo(guard);
  const what = `${correctedValue ? 'corrected value' : 'original value'} to ${ctx.topic}`;
  const message = resetTo ? `send ${what} (guard row ${guard!.state} → ${resetTo})` : `send ${what}`;
  const guardState = guard?.state ?? null;
  const outcome: RedriveOutcome = {
    ...ctx.base,
    action: 'send',
    guardState,
    guardReset: resetTo != null,
    message,
  };
  if (ctx.dryRun) return outcome;
  if (resetTo && !(await reopenForRedrive(tx, deps, ctx, found!, correctedValue))) {
    // The consumer moved the row meanwhile: let the operator look again rather than guess.
    return { ...ctx.base, action: 'skip', guardState, message: 'guard row changed meanwhile: retry' };
  }
  await recordRedrive(tx, ctx, { message, correctedValue, guard, resetTo });
  return {
    outcome,
    previousState: letter.state,
    message: redriveMessage(letter, ctx.topic!, correctedValue ?? letter.value, options.actor),
  };
}

/**
 * Step 5, after the commit: the consumer must find the guard row already reset, or it would take
 * the redrive for a redelivery of a final command and do nothing. If the send fails, nothing
 * reached Kafka: the letter goes back to its state so it can be redriven again (a guard row reset
 * to pending/in_flight is harmless without a message), and the error is thrown.
 */
async function sendPlanned(
  deps: RedriveDeps,
  id: number,
  options: RedriveOptions,
  planned: PlannedSend,
  log: Logger,
): Promise<RedriveOutcome> {
  const { outcome, message } = planned;
  try {
    const producer = typeof deps.producer === 'function' ? await deps.producer() : deps.producer;
    await producer.send({
      topic: message.topic,
      messages: [{ key: message.key, value: message.value, headers: message.headers }],
    });
  } catch (error) {
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

export async function redriveDeadLetter(
  deps: RedriveDeps,
  id: number,
  options: RedriveOptions,
): Promise<RedriveOutcome> {
  const log = deps.logger.child({ component: 'redrive', deadLetterId: id, actor: options.actor });
  const planned = await deps.db.$transaction((tx) => planRedrive(tx, deps, id, options, log), {
    timeout: 30_000,
    maxWait: 10_000,
  });
  return 'previousState' in planned ? sendPlanned(deps, id, options, planned, log) : planned;
}

interface PlannedSend {
  outcome: RedriveOutcome;
  previousState: DeadLetterState;
  message: RedriveMessage;
}
