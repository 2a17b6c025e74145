import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelay, type BackoffPolicy } from '../backoff.js';
import type { StepTools } from '../command-types/command-type.js';
import {
  commandIdOf,
  targetIdOf,
  commandSourceOf,
  type CommandIdentity,
  commandContracts,
  contractOfEvent,
  looseIdsOf,
  type AnyCommandContract,
} from '../contracts/command-contracts.js';
import {
  guardedWrite,
  GuardBusyError,
  preferredRequestIdBase,
  type CommandLocks,
  type CommandRepository,
  type GuardOptions,
  type GuardPartner,
  type ReadBackStrategy,
  type ThrottleGate,
} from '../guard/index.js';
import type { Logger, LogSummary } from '../logger.js';
import { metrics } from '../metrics.js';
import type { ResultPublisher } from './publish-result.js';
import { isRetriable } from '../errors.js';
import {
  type Acting,
  type Destinations,
  type Origin,
  deadLetterEvent,
  outcomeEvent,
  refusedOutcome,
} from './outcome-events.js';
import type { TopicMessages } from 'kafkajs';
import { parseCloudEvent } from '../contracts/cloudevent.js';
import { traceContextFor } from '../telemetry.js';

/** Trying a command again after the guard could not decide: 1 s doubled, at most 30 s. */
const COMMAND_RETRY: BackoffPolicy = { initialRetryTime: 1000, maxRetryTime: 30_000, maxGrowths: 5 };

export interface CommandHandlerDeps {
  dest: Destinations;
  repository: CommandRepository;
  locks: CommandLocks;
  /** The client (and its read-back strategy) acting for a source: its own key, else the deployment's. */
  actingFor(source: string): {
    partner: GuardPartner;
    key: Acting['key'];
    strategy: ReadBackStrategy<unknown>;
  };
  publisher: ResultPublisher;
  throttle: ThrottleGate;
  /** Aborted on stop: the command in hand is left as it is (its row keeps its state). */
  signal: AbortSignal;
  guard?: GuardOptions;
  /** Applied commands, one info line a minute (src/logger.ts). */
  finals?: LogSummary;
}

/** One valid command, with everything its attempts share. */
interface Work {
  origin: Origin;
  command: unknown;
  identity: CommandIdentity;
  targetId: string;
  acting: Acting;
  tools: StepTools;
  /** The base of the command's request ids, as far as known (its steps' `.s<n>` use it too). */
  base: { current: string };
  strategy: ReadBackStrategy<unknown>;
  log: Logger;
  /** The write is final: the record's next command may start while the result goes to Kafka. */
  release: () => void;
}

/**
 * Handles one message of a command topic, start to end: an invalid message is dead-lettered; a
 * command runs its type's steps and the guarded write, and its result is published. Resolves once
 * everything it publishes is on Kafka (the caller then commits the offset).
 */
export function createCommandHandler(deps: CommandHandlerDeps) {
  const { dest, publisher } = deps;
  const { type } = dest;

  /** One try: the guarded write (with its type's check), the step after, the publish. */
  async function attemptOnce(work: Work, log: Logger): Promise<void> {
    const { origin, command, identity, targetId, acting, tools } = work;
    const check = type.check?.wants(command) ? type.check : undefined;
    // Before any call: unique to this identity (another one may hold the plain command id).
    work.base.current = await deps.repository.requestIdBaseFor(identity);
    const { record, alreadyFinal, conflict, settled } = await guardedWrite(
      {
        repository: deps.repository,
        locks: deps.locks,
        strategy: work.strategy,
        logger: log, // the guard adds commandId itself
        throttle: deps.throttle,
        signal: deps.signal,
        ...(deps.guard && { options: deps.guard }),
        ...(deps.finals && { finals: deps.finals }),
      },
      {
        ...identity,
        targetId,
        command,
        requestIdBase: work.base.current,
        ...(check && { check: () => check.run(command, tools) }),
      },
    );
    work.base.current = record.requestIdBase;
    // Once the final state is committed (a settle that fails leaves the record held: the attempt
    // fails and the command is tried again).
    settled.then(work.release, () => undefined);
    if (conflict) {
      await Promise.all([publisher.publishConflict(origin, identity, targetId, record), settled]);
      return;
    }
    if (alreadyFinal)
      work.log.info({ state: record.state }, 'command already final: outcome published again');
    // Both must hold before the offset is committed.
    const completion = type.complete ? await type.complete(command, record, tools) : {};
    await Promise.all([publisher.publishResult(origin, record, alreadyFinal, completion, acting), settled]);
  }

  /**
   * Tries the command until it is published. Only a failure the retry policy calls retriable is
   * tried again (the row keeps its state, so that is safe); anything else is a bug and is thrown.
   */
  async function runCommand(work: Work, log: Logger): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await attemptOnce(work, log);
      } catch (error) {
        // On shutdown, leave it: the next owner of the partition takes it up.
        if (deps.signal.aborted) throw error;
        if (!isRetriable(error)) {
          work.log.error({ err: error }, 'command failed with an error that is not retried: a bug');
          throw error;
        }
        const waitMs = backoffDelay(COMMAND_RETRY, attempt);
        if (error instanceof GuardBusyError)
          work.log.warn({ waitMs }, 'command still worked on by another process: trying again');
        // Transient (a read or the database did not answer in time) and retried: a person is
        // needed only when it keeps happening.
        else
          work.log[attempt >= 5 ? 'error' : 'warn'](
            { err: error, waitMs, attempt },
            'command interrupted: trying again',
          );
        await sleep(waitMs, undefined, { signal: deps.signal });
      }
    }
  }

  return async function handle(origin: Origin, log: Logger, release: () => void = () => {}): Promise<void> {
    const parsed = parseCommandMessage(type, origin);
    if (!parsed.ok) {
      log.warn({ err: parsed.error }, 'invalid message: dead-lettered');
      await publisher.send(invalidMessageBatches(dest, origin, parsed.error));
      metrics.deadLetters.inc({ topic: type.topic, reason: 'invalid_message' });
      return;
    }
    const { command, eventId, ceSource } = parsed;
    const commandId = commandIdOf(type, command);
    const identity: CommandIdentity = {
      source: commandSourceOf(ceSource),
      commandType: type.kind,
      commandId,
    };
    // Every Partner API call of this command (steps, snapshot, write, read-back) with one key: its
    // source's own, else the deployment's.
    const { partner, key, strategy } = deps.actingFor(identity.source);
    // The CloudEvent id ties this command to its webhook and outbox row; its identity to its
    // Partner API attempts (request ids `<base>.a<n>`), outcome and dead letter.
    const clog = log.child({ commandId, commandSource: identity.source, eventId, partnerKey: key });
    let steps = 0;
    const base = { current: preferredRequestIdBase(identity) };
    const tools: StepTools = {
      identity,
      partner,
      repository: deps.repository,
      logger: clog,
      // The command's base: looked up before its first call, its row's once the guard has it.
      nextRequestId: () => `${base.current}.s${++steps}`,
    };
    const acting: Acting = { source: identity.source, ceSource, key };
    const targetId = targetIdOf(type, command);
    await runCommand(
      { origin, command, identity, targetId, acting, tools, base, strategy, log: clog, release },
      log,
    );
  };
}

/**
 * A message on a command topic that is not a command of the topic's type: not JSON, not a
 * CloudEvent, another CloudEvent type, or data that fails the schema. Never retried (the same
 * bytes fail the same way: no crash loop on a poison message); dead-lettered as `invalid_message`
 * and, when its id can be read, answered with a `rejected` outcome.
 */

/** A message read as a command of the consumer's type, or why it is not one. */
export type ParsedMessage<C> =
  | { ok: true; command: C; eventId: string; ceSource: string; time: string | undefined }
  | { ok: false; error: unknown };

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
      time: event.time,
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
