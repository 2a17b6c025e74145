import { setTimeout as sleep } from 'node:timers/promises';
import type { Prisma } from '@prisma/client';
import type { CommandIdentity } from '../contracts/command-contracts.js';
import type { Logger, LogSummary } from '../logger.js';
import { metrics } from '../metrics.js';
import {
  classifyFailure,
  type GuardAction,
  type GuardEvent,
  type MachineState,
  type Prelude,
  type Wait,
} from './machine/guard-machine.js';
import type { CommandLock, CommandLocks } from './store/command-lock.js';
import type { CommandRecord, CommandRepository, FailureInput } from './store/command-repository.js';
import { readRequestId } from './machine/command-record.js';
import type { ReadBackStrategy, Verdict } from './read-backs/read-back.js';

/**
 * What each of the guard machine's actions does (guard-machine.ts decides; guarded-write.ts runs
 * this table): one call to the database, the Partner API or the lock per action, then the event
 * that reports it. Nothing here decides: the time, the error and a random number for the back-off
 * spread go back to the machine as they are.
 */

/** The resources of one guarded write (not its state: that is the machine's). */
export interface EffectContext<C> {
  repository: CommandRepository;
  locks: CommandLocks;
  strategy: ReadBackStrategy<C>;
  throttle: ThrottleGate | undefined;
  signal: AbortSignal | undefined;
  log: Logger;
  /** Applied commands, counted in one info line a minute (src/logger.ts). */
  finals?: LogSummary;
  identity: CommandIdentity;
  command: C;
  targetId: string;
  check: (() => Promise<FailureInput | null>) | undefined;
  /** The command's lock: being tried, then held (released by guardedWrite). */
  owned: { lock?: CommandLock; taking?: Promise<CommandLock | null> };
}

/** An effect ends the walk with a result, or reports an event to the machine. */
export type Done = { result: GuardResultBase } | GuardEvent;

export interface GuardResultBase {
  record: CommandRecord;
  alreadyFinal: boolean;
  conflict?: boolean;
  settled: Promise<void>;
}

type Effect<C, T extends GuardAction['type']> = (
  ctx: EffectContext<C>,
  state: MachineState,
  action: Extract<GuardAction, { type: T }>,
) => Promise<Done>;

/** A read that failed: reported to the machine (it retries or stops), unless the consumer is stopping. */
function failedRead<C>(
  ctx: EffectContext<C>,
  error: unknown,
  readIds: number,
  startedAt: number,
): GuardEvent {
  if (ctx.signal?.aborted) throw error;
  return { type: 'read_failed', at: Date.now(), error, readIds, startedAt, rand: Math.random() };
}

function newCommand<C>(ctx: EffectContext<C>) {
  return { ...ctx.identity, targetId: ctx.targetId, payload: ctx.command as Prisma.InputJsonValue };
}

const resolved = Promise.resolve();

function counted<C>(ctx: EffectContext<C>, record: CommandRecord, settled = resolved): Done {
  metrics.commands.inc({ command: ctx.identity.commandType, status: record.state });
  // Applied is the routine result, one a request: at debug, and counted in a line a minute
  // (issue 41). A command that did not apply stays one line at info: someone may have to act.
  const fields = {
    state: record.state,
    attempts: record.attempts,
    partnerRequestId: record.requestIds.at(-1),
  };
  if (record.state === 'applied' || record.state === 'already_applied') {
    ctx.log.debug(fields, 'command final');
    ctx.finals?.add(record.state);
  } else ctx.log.info(fields, 'command final');
  return { result: { record, alreadyFinal: false, settled } };
}

export const EFFECTS: { [T in GuardAction['type']]: Effect<unknown, T> } = {
  look: async (ctx) => ({ type: 'looked', record: await ctx.repository.find(ctx.identity) }),
  check: async (ctx) => ({ type: 'checked', refusal: await ctx.check!() }),
  ensure: async (ctx) => ({ type: 'ensured', record: await ctx.repository.ensure(newCommand(ctx)) }),
  load: async (ctx) => ({
    type: 'loaded',
    record: await ctx.repository.ensure(newCommand(ctx)),
    at: Date.now(),
  }),

  async snapshot(ctx, state, action) {
    if (action.tryLock) {
      ctx.owned.taking = ctx.locks.tryAcquire(ctx.identity);
      // Its failure (PostgreSQL down) surfaces when the lock is awaited; until then a handler must
      // be attached, or the rejection would be unhandled and end the process.
      ctx.owned.taking.catch(() => undefined);
    }
    const startedAt = Date.now();
    let n = state.readIds;
    try {
      await ctx.throttle?.wait(ctx.signal);
      const read = { nextReadId: () => readRequestId(state.base, state.attempts, ++n) };
      const snapshot = await ctx.strategy.snapshot(ctx.command, read);
      return { type: 'snapshot_taken', at: Date.now(), snapshot, readIds: n, startedAt };
    } catch (error) {
      return failedRead(ctx, error, n, startedAt);
    }
  },

  async create(ctx, state, action) {
    await ctx.throttle?.wait(ctx.signal);
    const record = await ctx.repository.createInFlight({
      ...newCommand(ctx),
      requestIdBase: state.base,
      snapshot: action.snapshot,
      snapshotRead: action.step,
    });
    return { type: 'created', record };
  },

  async lock(ctx, _state, action) {
    const lock =
      action.waitMs > 0
        ? await ctx.locks.acquire(ctx.identity, {
            waitMs: action.waitMs,
            ...(ctx.signal && { signal: ctx.signal }),
          })
        : await ctx.owned.taking!;
    ctx.owned.lock = lock ?? undefined;
    return { type: 'locked', at: Date.now(), held: lock != null };
  },

  async note_interrupted(ctx, _state, action) {
    await ctx.repository.endWrite(ctx.identity, action.attempt, { result: 'interrupted' });
    return { type: 'noted', at: Date.now() };
  },

  async write(ctx, state, action) {
    if (!action.begun) {
      await ctx.throttle?.wait(ctx.signal);
      // The baseline is never replaced: the row keeps the first one (see beginWrite).
      const { attempt, requestId } = action;
      await ctx.repository.beginWrite(ctx.identity, { attempt, requestId, snapshot: state.snapshot! });
    }
    // The lock's session died (connection lost): another process may take the command over,
    // so this one must not send. The row is in_flight: whoever takes it reads back first.
    if (!ctx.owned.lock?.held) throw new GuardInterruptedError('command lock lost before the write was sent');
    try {
      const result = await ctx.strategy.write(ctx.command, action.requestId);
      return { type: 'answered', at: Date.now(), failure: null, status: result.status };
    } catch (error) {
      // The answer is kept on the attempt's row before the machine hears of it; its time is the
      // end of that (the bound counts from it, as late as this process can know it).
      const f = classifyFailure(error);
      const fields = { kind: f.kind, status: f.status, code: f.code, err: error, attempt: action.attempt };
      ctx.log.warn({ ...fields, partnerRequestId: action.requestId }, 'write failed');
      await ctx.repository.endWrite(ctx.identity, action.attempt, {
        result: f.kind,
        status: f.status,
        code: f.code,
        message: f.message,
      });
      return { type: 'answered', at: Date.now(), failure: f, rand: Math.random() };
    }
  },

  async read_back(ctx, state) {
    const at = Date.now();
    let n = state.readIds;
    let missing: string | null = null;
    try {
      await ctx.throttle?.wait(ctx.signal);
      const verdict = await ctx.strategy.verdict(ctx.command, state.snapshot!, {
        nextReadId: () => readRequestId(state.base, state.attempts, ++n),
        missing: (evidence) => void (missing = evidence),
      });
      return { type: 'read', at, verdict, readIds: n, startedAt: at, missing, rand: Math.random() };
    } catch (error) {
      return failedRead(ctx, error, n, at);
    }
  },

  async stop(_ctx, state, action) {
    if (action.conflict)
      return { result: { record: state.record!, alreadyFinal: false, conflict: true, settled: resolved } };
    if (action.busy) throw new GuardBusyError(action.message);
    throw new GuardInterruptedError(action.message, { cause: action.cause });
  },

  async finish(ctx, state, action) {
    if (action.alreadyFinal)
      return { result: { record: state.record!, alreadyFinal: true, settled: resolved } };
    if (action.settle) {
      // The outcome is known now; its commit runs while the caller publishes it.
      const { attempt, status, record } = action.settle;
      const settled = ctx.repository.applied(ctx.identity, attempt, status).then(() => undefined);
      settled.catch(() => undefined);
      return counted(ctx, record!, settled);
    }
    return counted(ctx, await ctx.repository.finish(ctx.identity, action.state, action.error ?? undefined));
  },
};

/** Performs an action of the machine: its prelude, then its effect. */
export async function perform<C>(
  ctx: EffectContext<C>,
  state: MachineState,
  action: GuardAction,
): Promise<Done> {
  await prelude(ctx, action);
  const effect = EFFECTS[action.type] as Effect<C, GuardAction['type']>;
  return effect(ctx, state, action as never);
}

/** What the machine asks to be done before its action, in order. */
async function prelude<C>(ctx: EffectContext<C>, p: Prelude): Promise<void> {
  const { repository, identity, log } = ctx;
  for (const step of p.steps ?? []) {
    if (step.kind === 'read_back') {
      metrics.readBacks.inc({ command: identity.commandType, verdict: step.result as Verdict });
      log.info({ verdict: step.result, attempt: step.attempt }, 'read back');
    }
    await repository.logRead(identity, step);
  }
  if (p.note)
    log[p.note.level]({ ...p.note.fields, ...(p.note.err !== undefined && { err: p.note.err }) }, p.note.msg);
  if (p.markPending) await repository.markPending(identity, p.markPending);
  if (p.wait) await pause(ctx, p.wait);
}

/** A wait the machine asked for: a back-off, the processing bound, or the shared budget's pause. */
async function pause<C>(ctx: EffectContext<C>, wait: Wait): Promise<void> {
  const startedAt = new Date();
  const ms = wait.until - startedAt.getTime();
  if (wait.throttled && ctx.throttle) await ctx.throttle.pause(new Date(wait.until));
  else if (ms > 0) await sleep(ms, undefined, { signal: ctx.signal });
  else return;
  if (wait.step) {
    const step = { ...wait.step, kind: 'wait' as const, result: 'waited', startedAt, finishedAt: new Date() };
    await ctx.repository.logRead(ctx.identity, step);
  }
}

/** A read needed to decide could not be made: the row keeps its state; process the command later. */
export class GuardInterruptedError extends Error {
  override name = 'GuardInterruptedError';
  readonly retriable = true;
}

/** Another process is still working on the command after `lockWaitMs`: try it again later. */
export class GuardBusyError extends GuardInterruptedError {
  override name = 'GuardBusyError';
}

/**
 * A 429 means the shared budget is spent (spec 8: every process on the egress IP shares it): the
 * whole consumer waits, not only the command that met it. The gate holds the pause, tells the
 * owner to pause/resume its Kafka fetches and the shared budget, and makes every write wait.
 */
export interface ThrottleGate {
  /** Resolves once no pause is in force (rejects if `signal` aborts). */
  wait(signal?: AbortSignal): Promise<void>;
  /** Pauses everything until `until` (a later pause extends it). */
  pause(until: Date): Promise<void>;
  /** Clears the timer (on stop). */
  close(): void;
}

export interface ThrottleHooks {
  onPause?(until: Date): Promise<void> | void;
  onResume?(): Promise<void> | void;
}

export function createThrottleGate(hooks: ThrottleHooks = {}): ThrottleGate {
  let until = 0;
  let timer: NodeJS.Timeout | undefined;
  return {
    async wait(signal) {
      while (Date.now() < until) await sleep(until - Date.now(), undefined, { signal });
    },
    async pause(date) {
      if (date.getTime() <= until) return;
      until = date.getTime();
      await hooks.onPause?.(date);
      clearTimeout(timer);
      // A failed resume must not kill the process; the next pause or restart resumes anyway.
      timer = setTimeout(
        () => void Promise.resolve(hooks.onResume?.()).catch(() => undefined),
        Math.max(0, until - Date.now()),
      );
      timer.unref();
    },
    close() {
      clearTimeout(timer);
    },
  };
}
