import type { Logger, LogSummary } from '../logger.js';
import { PARTNER_MAX_PROCESSING_MS_DEFAULT } from '../partner/assumptions.js';
import { forBudgetSource } from '../partner/partner-client.js';
import type { CommandIdentity } from '../contracts/command-contracts.js';
import type { CommandLocks } from './store/command-lock.js';
import type { CommandRecord, CommandRepository, FailureInput } from './store/command-repository.js';
import { preferredRequestIdBase } from './machine/command-record.js';
import { perform, type EffectContext, type ThrottleGate } from './guard-effects.js';
import { decide, initialState, type MachineLimits } from './machine/guard-machine.js';
import type { ReadBackStrategy } from './read-backs/read-back.js';

export { GuardBusyError, GuardInterruptedError } from './guard-effects.js';

/**
 * The guarded write (DESIGN.md, "The guarded write"): the Partner API takes no idempotency key
 * and a write that failed with a 5xx or timed out may have been applied, or may be applied later
 * (spec 7.4), so a write is never retried on a guess. What to do next is decided by the pure
 * state machine in guard-machine.ts, which owns every change to a command's row: the check, the
 * lock, the row, the baseline, the write, the read-backs, the final state. This file is its
 * driver, a small interpreter: it performs each action (guard-effects.ts) and reports what
 * happened as the next event; it keeps no state of its own between actions (the machine's state
 * value carries it). Per command identity (source + type + id) a row walks:
 *
 *   pending ─baseline─▶ in_flight (committed) ─write─▶ 2xx: applied
 *                                              ├─ 429: pending, whole consumer waits Retry-After
 *                                              ├─ 401 (the client already renewed once): rejected
 *                                              ├─ 409 invalid_state_transition: read → already_applied | rejected
 *                                              ├─ 409 lock_failed: pending, retry (bounded → exhausted)
 *                                              ├─ other 4xx: rejected
 *                                              └─ 5xx / time-out / network / restart in in_flight: READ BACK
 *                                                   applied → applied; before the processing bound:
 *                                                   wait, read again; past it: unchanged since the
 *                                                   baseline → pending, retry (bounded → exhausted);
 *                                                   else → unverified
 *
 * One writer per command (docs/decisions/011-one-writer-per-command.md): the whole walk runs
 * under the command's lock (src/guard/store/command-lock.ts), which dies with its process. A process
 * that meets a command another one is working on (a Kafka rebalance redelivered it) waits for
 * the lock, then walks the row as the holder left it: final → publish again, write nothing;
 * still in_flight → the holder died mid-write: read back, and wait out the processing bound
 * (counted from the takeover) before it may conclude "not applied".
 */

export interface GuardOptions {
  /** Writes retried after a read-back proved the previous one not applied. Default 5. */
  maxRetries?: number;
  /** Retries after `409 lock_failed`. Default 5. */
  maxLockRetries?: number;
  /** 429 answers tolerated for one command before it is `exhausted`. Default 50. */
  maxThrottles?: number;
  /** Retries of a read (snapshot or read-back) that failed transiently. Default 5. */
  maxReadRetries?: number;
  /** First back-off delay, doubled per retry with jitter. Default 500 ms. */
  backoffMs?: number;
  /** Back-off cap. Default 30 s. */
  maxBackoffMs?: number;
  /**
   * First read-back after a 5xx, time-out or network error, counted from the end of the call: it
   * can prove "applied" early. Later reads double the gap, up to the processing bound. Default
   * 1000 ms.
   */
  readBackDelayMs?: number;
  /**
   * The Partner API's longest processing time of a write (PARTNER_MAX_PROCESSING_MS,
   * src/partner/assumptions.ts): "not applied" is concluded only from a read made this long
   * after the last write's call ended (or after a takeover of a row left in flight). Default
   * 30000 ms.
   */
  maxProcessingMs?: number;
  /**
   * How long to wait for a command another process is working on before giving up with
   * `GuardBusyError` (the consumer then tries the command again later). Default 30 s.
   */
  lockWaitMs?: number;
}

export interface GuardDeps<C> {
  repository: CommandRepository;
  /** One writer per command across processes. */
  locks: CommandLocks;
  strategy: ReadBackStrategy<C>;
  logger: Logger;
  /** Shared by the consumer: a 429 pauses every write until Retry-After. */
  throttle?: ThrottleGate;
  /** Aborts back-off sleeps on shutdown (never a write in flight). */
  signal?: AbortSignal;
  options?: GuardOptions;
  /** Applied commands are counted here, in one info line a minute (the consumer's). */
  finals?: LogSummary;
}

export interface GuardInput<C> extends CommandIdentity {
  targetId: string;
  command: C;
  /**
   * The request-id base for calls made before the row is known (CommandRepository
   * `requestIdBaseFor`); default the base the command id asks for.
   */
  requestIdBase?: string;
  /**
   * A check the command must pass before its write (a registration's eligibility check; no side
   * effect): run unless the row shows it checked already. Answers null when it passes, else the
   * refusal the command ends `rejected` with; throws on a transient failure (try again later).
   */
  check?: () => Promise<FailureInput | null>;
}

export interface GuardResult {
  record: CommandRecord;
  /** The row was already final: nothing was written this time (a redelivery or a redrive). */
  alreadyFinal: boolean;
  /**
   * The identity already belongs to a command of other content (another target, amount, date,
   * decision): nothing was written and `record` is THAT command's row, untouched. The caller
   * refuses this one (`conflicting_duplicate`); it is never taken for the first.
   */
  conflict?: boolean;
  /**
   * Resolves once the final state is committed (the command's lock is released then). After a
   * 2xx the outcome is already known, so the caller may publish it meanwhile; it must await this
   * before committing the Kafka offset (if it fails, the redelivered command finds the row
   * in_flight and reads it back).
   */
  settled: Promise<void>;
}

const DEFAULTS: Required<GuardOptions> = {
  maxRetries: 5,
  maxLockRetries: 5,
  maxThrottles: 50,
  maxReadRetries: 5,
  backoffMs: 500,
  maxBackoffMs: 30_000,
  readBackDelayMs: 1000,
  maxProcessingMs: PARTNER_MAX_PROCESSING_MS_DEFAULT,
  lockWaitMs: 30_000,
};

export async function guardedWrite<C>(deps: GuardDeps<C>, input: GuardInput<C>): Promise<GuardResult> {
  const owned: EffectContext<C>['owned'] = {};
  let result: GuardResult;
  try {
    // Every Partner call of the walk (snapshot, write, read-backs) is counted to the command's
    // source in the shared budget, which shares its slots by source (issue 52).
    result = await forBudgetSource(input.source, () => walk(deps, input, owned));
  } catch (error) {
    // A lock still being tried is released once it comes (if it comes).
    const lock = owned.lock ?? (await owned.taking?.catch(() => null));
    await lock?.release();
    throw error;
  }
  // Released only once the final state is committed: a process waiting for the lock then reads
  // the final row, never the in_flight one of a write that succeeded. The unlock itself is not
  // awaited (it never throws): the caller has nothing to wait for once the state is committed.
  const settled = result.settled.finally(() => void owned.lock?.release());
  settled.catch(() => undefined);
  return { ...result, settled };
}

function limitsOf(options: Required<GuardOptions>): MachineLimits {
  const { lockWaitMs, maxReadRetries, ...rest } = options;
  return { ...rest, lockWaitMs, maxReadRetries };
}

/** The interpreter: performs the machine's action, reports what happened, until a result. */
async function walk<C>(deps: GuardDeps<C>, input: GuardInput<C>, owned: EffectContext<C>['owned']) {
  const limits = limitsOf({ ...DEFAULTS, ...deps.options });
  const identity: CommandIdentity = {
    source: input.source,
    commandType: input.commandType,
    commandId: input.commandId,
  };
  const ctx: EffectContext<C> = {
    repository: deps.repository,
    locks: deps.locks,
    strategy: deps.strategy,
    throttle: deps.throttle,
    signal: deps.signal,
    log: deps.logger.child({
      commandId: input.commandId,
      commandSource: input.source,
      commandType: input.commandType,
    }),
    ...(deps.finals && { finals: deps.finals }),
    identity,
    command: input.command,
    targetId: input.targetId,
    check: input.check,
    owned,
  };
  let d = decide(
    initialState(),
    {
      type: 'began',
      commandId: input.commandId,
      // Until the row is known (the snapshot is read before it is created), the base it asks for.
      base: input.requestIdBase ?? preferredRequestIdBase(identity),
      payload: input.command,
      check: input.check !== undefined,
    },
    limits,
  );
  for (;;) {
    const done = await perform(ctx, d.state, d.action);
    if ('result' in done) return done.result;
    d = decide(d.state, done, limits);
  }
}
