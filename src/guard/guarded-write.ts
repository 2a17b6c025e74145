import { setTimeout as sleep } from 'node:timers/promises';
import type { Prisma } from '@prisma/client';
import type { Logger } from '../logger.js';
import { backoffDelay } from '../backoff.js';
import { metrics } from '../metrics.js';
import { PARTNER_MAX_PROCESSING_MS_DEFAULT } from '../partner/assumptions.js';
import { classifyFailure, type FailureInfo } from './classify-failure.js';
import type { CommandLock, CommandLocks } from './command-lock.js';
import type { CommandIdentity } from '../events/command-identity.js';
import type { CommandRecord, CommandRepository, FinalState, StepInput } from './command-repository.js';
import { isFinal, sameContent } from './command-repository.js';
import { decide, initialState, type MachineLimits } from './guard-machine.js';
import type { ReadBackStrategy, ReadContext, Snapshot, Verdict } from './read-back.js';
import { preferredRequestIdBase, readRequestId, writeRequestId } from './command-request-ids.js';
import type { ThrottleGate } from './throttle-gate.js';

/**
 * The guarded write (DESIGN.md, "The guarded write"): the Partner API takes no idempotency key
 * and a write that failed with a 5xx or timed out may have been applied, or may be applied later
 * (spec 7.4), so a write is never retried on a guess. What to do next is decided by the pure
 * state machine in guard-machine.ts; this file is its driver: it performs each action (read the
 * baseline, commit and send a write, wait and read back, commit the final state) and reports
 * what happened. Per command identity (source + type + id) a row walks:
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
 * under the command's lock (src/guard/command-lock.ts), which dies with its process. A process
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
}

export interface GuardInput<C> extends CommandIdentity {
  targetId: string;
  command: C;
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

/** A read needed to decide could not be made: the row keeps its state; process the command later. */
export class GuardInterruptedError extends Error {
  override name = 'GuardInterruptedError';
  readonly retriable = true;
}

/** Another process is still working on the command after `lockWaitMs`: try it again later. */
export class GuardBusyError extends GuardInterruptedError {
  override name = 'GuardBusyError';
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

function asFailure(f: FailureInfo) {
  return { code: f.code, status: f.status, message: f.message, ...(f.error && { partner_error: f.error }) };
}

export async function guardedWrite<C>(deps: GuardDeps<C>, input: GuardInput<C>): Promise<GuardResult> {
  const owned: { lock?: CommandLock } = {};
  let result: GuardResult;
  try {
    result = await walk(deps, input, owned);
  } catch (error) {
    await owned.lock?.release();
    throw error;
  }
  // Released only once the final state is committed: a process waiting for the lock then reads
  // the final row, never the in_flight one of a write that succeeded. The unlock itself is not
  // awaited (it never throws): the caller has nothing to wait for once the state is committed.
  const settled = result.settled.finally(() => void owned.lock?.release());
  settled.catch(() => undefined);
  return { ...result, settled };
}

async function walk<C>(
  deps: GuardDeps<C>,
  input: GuardInput<C>,
  owned: { lock?: CommandLock },
): Promise<GuardResult> {
  const options = { ...DEFAULTS, ...deps.options };
  const { repository: repo, strategy, signal } = deps;
  const identity: CommandIdentity = {
    source: input.source,
    commandType: input.commandType,
    commandId: input.commandId,
  };
  const { commandId } = input;
  const log = deps.logger.child({ commandId, commandSource: input.source, commandType: input.commandType });
  // Every request id of the command starts with its base, kept on its row; until the row is
  // known (the snapshot read before it is created), the base it asks for.
  let base = preferredRequestIdBase(identity);

  let attempt = 0;
  let reads = 0;
  /** What evidence the last read-back lacked, if it could not tell (for the unverified reason). */
  let missing: string | null = null;
  const ctx: ReadContext = {
    nextReadId: () => readRequestId(base, attempt, ++reads),
    missing: (evidence) => {
      missing = evidence;
    },
  };
  const backoff = (n: number) =>
    backoffDelay(
      { initialRetryTime: options.backoffMs, maxRetryTime: options.maxBackoffMs, factor: 0.25 },
      n,
    );

  const counted = (): GuardResult => {
    metrics.commands.inc({ command: input.commandType, status: record.state });
    log.info(
      { state: record.state, attempts: record.attempts, partnerRequestId: record.requestIds.at(-1) },
      'command final',
    );
    return { record, alreadyFinal: false, settled: Promise.resolve() };
  };
  const finish = async (state: FinalState, failure?: FailureInfo): Promise<GuardResult> => {
    record = await repo.finish(identity, state, failure ? asFailure(failure) : undefined);
    return counted();
  };

  /** A read that must succeed to decide; transient failures are retried, then the guard stops. */
  const read = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    for (let n = 1; ; n++) {
      await deps.throttle?.wait(signal);
      try {
        return await fn();
      } catch (error) {
        const f = classifyFailure(error);
        if (f.kind === 'throttled') {
          await deps.throttle?.pause(new Date(Date.now() + (f.retryAfterSeconds ?? 1) * 1000));
          if (!deps.throttle) await sleep((f.retryAfterSeconds ?? 1) * 1000, undefined, { signal });
        } else if (n > options.maxReadRetries) {
          throw new GuardInterruptedError(`${what} failed: ${f.message}`, { cause: error });
        } else {
          log.warn({ err: error, what, partnerRequestId: f.requestId }, 'read failed; retrying');
          await sleep(backoff(n), undefined, { signal });
        }
      }
    }
  };

  const readBack = async (snapshot: Snapshot): Promise<Verdict> => {
    const requestId = readRequestId(base, attempt, reads + 1);
    const startedAt = new Date();
    const verdict = await read('read-back', () =>
      strategy.verdict(input.command, snapshot, ctx).catch((error: unknown) => {
        // An answer of a shape the client does not recognise is no evidence either way: the
        // same read would fail the same way, so it is "unknown", never a retried read.
        if ((error as { name?: unknown } | null)?.name !== 'PartnerResponseError') throw error;
        missing = `the answer's shape is not recognised (${(error as Error).message})`;
        return 'unknown' as const;
      }),
    );
    metrics.readBacks.inc({ command: input.commandType, verdict });
    await repo.logRead(identity, {
      attempt,
      requestId,
      kind: 'read_back',
      result: verdict,
      message: verdictReason(verdict, missing),
      startedAt,
      finishedAt: new Date(),
    });
    log.info({ verdict, attempt }, 'read back');
    return verdict;
  };

  /** A wait of the guard, kept as a step with its reason (about the last write's request id). */
  const logWait = (startedAt: Date, why: string) =>
    repo.logRead(identity, {
      attempt,
      requestId: writeRequestId(base, Math.max(attempt, 1)),
      kind: 'wait',
      result: 'waited',
      message: why,
      startedAt,
      finishedAt: new Date(),
    });

  // The common case, a command seen for the first time: the snapshot is read, then the row is
  // created directly as in_flight with it (one round trip). Otherwise (the row exists, or the
  // snapshot could not be read) the row is looked up and walked from its state; a snapshot
  // already read is used for its next write, or thrown away if the command is final or was
  // left in flight.
  const payload = input.command as Prisma.InputJsonValue;
  let early: Promise<Snapshot> | undefined;
  let begun: { snapshot: Snapshot; requestId: string } | undefined;
  let created: CommandRecord | null = null;
  // The lock is tried while the snapshot is read and a first-seen command's row created, so the
  // common case (nobody else on the command) waits for none of them in turn. Creating the row
  // before the lock is held is safe: no write is ever sent without the lock, and whoever holds
  // it walks the row from its committed state (an in_flight row is read back before any write).
  const taking = deps.locks.tryAcquire(identity);
  // Its failure (PostgreSQL down) surfaces at `await taking` below; until then a handler must be
  // attached, or the rejection would be unhandled and end the process.
  taking.catch(() => undefined);
  let taken: CommandLock | null = null;
  let firstRead: StepInput | undefined;
  try {
    const readStarted = new Date();
    const first = await read('snapshot', () => strategy.snapshot(input.command, ctx)).catch(
      (error: unknown) => {
        if (signal?.aborted) throw error;
        log.warn({ err: error }, 'snapshot failed; looking the command up first');
        return undefined;
      },
    );
    if (first) {
      firstRead = snapshotStep(base, 0, reads, first, readStarted);
      await deps.throttle?.wait(signal);
      const requestId = writeRequestId(base, 1);
      created = await repo.createInFlight({
        ...identity,
        targetId: input.targetId,
        payload,
        requestIdBase: base,
        snapshot: first,
        snapshotRead: firstRead,
      });
      if (created) begun = { snapshot: first, requestId };
      else early = Promise.resolve(first);
    }
  } finally {
    taken = await taking;
    owned.lock = taken ?? undefined;
  }
  if (!taken) {
    // Another process is working on this command (a rebalance handed us its message while its
    // write is on its way): wait for it, then walk the row as it left it. What was read or
    // created meanwhile is dropped: the snapshot may predate its write, and a row we created
    // in_flight (its write never sent) is read back like any other.
    early = undefined;
    begun = undefined;
    created = null;
    log.info({ waitMs: options.lockWaitMs }, 'command held by another process: waiting for it');
    taken = await deps.locks.acquire(identity, {
      waitMs: options.lockWaitMs,
      ...(signal && { signal }),
    });
    if (!taken) throw new GuardBusyError(`command ${commandId} is still being worked on by another process`);
    owned.lock = taken;
    log.info('command lock taken after waiting');
  }
  const lock: CommandLock = taken;
  let record: CommandRecord =
    created ?? (await repo.ensure({ ...identity, targetId: input.targetId, payload }));
  base = record.requestIdBase;
  // Same identity, other content: another command under a reused id. Never walked, never written.
  if (!created && !sameContent(record.payload, payload)) {
    log.warn({ existingTarget: record.targetId, existingState: record.state }, 'conflicting duplicate');
    return { record, alreadyFinal: false, conflict: true, settled: Promise.resolve() };
  }
  if (!begun && isFinal(record.state)) return { record, alreadyFinal: true, settled: Promise.resolve() };
  attempt = record.attempts;
  const requestIds = [...record.requestIds];

  const limits: MachineLimits = {
    maxRetries: options.maxRetries,
    maxLockRetries: options.maxLockRetries,
    maxThrottles: options.maxThrottles,
    backoffMs: options.backoffMs,
    maxBackoffMs: options.maxBackoffMs,
    readBackDelayMs: options.readBackDelayMs,
    maxProcessingMs: options.maxProcessingMs,
  };
  // The baseline: the snapshot read before the command's first write, kept on the row across
  // attempts, restarts and owners. A row created here in flight carries the one just read.
  let baseline: Snapshot | null = begun ? begun.snapshot : record.snapshot;
  const startedAt = Date.now();
  if (!begun && record.state === 'in_flight') {
    // A previous run committed in_flight and never recorded the answer (crash, kill, lost
    // connection): the write may have landed, or may land yet. Read back; never write on a guess.
    log.warn({ attempt }, 'command found in flight: reading back');
    await repo.endWrite(identity, attempt, { result: 'interrupted' });
  }
  let d = decide(
    initialState(),
    {
      type: 'started',
      at: startedAt,
      // A row created in flight here has not been sent yet: to the machine it is pending.
      row: begun ? 'pending' : record.state,
      attempts: begun ? 0 : record.attempts,
      baseline: baseline != null,
    },
    limits,
  );

  for (;;) {
    const action = d.action;
    switch (action.type) {
      case 'finish': {
        if (action.alreadyFinal) return { record, alreadyFinal: true, settled: Promise.resolve() };
        let failure = action.failure ?? undefined;
        if (action.state === 'unverified' && missing && failure) {
          // Say what evidence the read-back lacked, so ops (and the dead letter) know why.
          failure = {
            ...failure,
            message: `read-back could not tell: ${missing as string}; the write: ${failure.message}`,
          };
          // The outcome shows the Partner API's error whole; its message says why too.
          if (failure.error) failure.error = { ...failure.error, message: failure.message };
        }
        return finish(action.state, failure);
      }

      case 'snapshot': {
        // A snapshot read before the lock was taken at once is as good (nobody else was writing).
        const readStarted = new Date();
        const readsBefore = reads;
        baseline = await (early ?? read('snapshot', () => strategy.snapshot(input.command, ctx)));
        await repo.logRead(
          identity,
          early && firstRead
            ? firstRead
            : snapshotStep(base, attempt, reads, baseline, readStarted, readsBefore),
        );
        early = undefined;
        d = decide(d.state, { type: 'snapshot_taken', at: Date.now() }, limits);
        continue;
      }

      case 'read_back': {
        const waitMs = action.notBefore - Date.now();
        if (waitMs > 0) {
          if (action.whyNow === 'bound')
            log.info(
              { waitMs, attempt },
              'write unanswered: waiting out the processing bound before concluding',
            );
          const waitStarted = new Date();
          await sleep(waitMs, undefined, { signal });
          await logWait(
            waitStarted,
            action.whyNow === 'bound'
              ? `processing bound: "not applied" may be concluded only from a read made PARTNER_MAX_PROCESSING_MS (${options.maxProcessingMs} ms) after the write's call ended`
              : 'before an early read-back: it can prove "applied" before the processing bound',
          );
        }
        const at = Date.now();
        missing = null;
        const verdict = await readBack(baseline!);
        d = decide(d.state, { type: 'read', at, verdict }, limits);
        continue;
      }

      case 'write': {
        if (action.pending) await repo.markPending(identity, asFailure(action.pending));
        const waitStarted = new Date();
        if (action.throttled) {
          await deps.throttle?.pause(new Date(Date.now() + action.waitMs));
          if (!deps.throttle) await sleep(action.waitMs, undefined, { signal });
          await logWait(
            waitStarted,
            `throttled: 429 Retry-After, ${action.waitMs} ms, for every process sharing the budget`,
          );
        } else if (action.waitMs > 0) {
          await sleep(action.waitMs * (0.75 + Math.random() * 0.5), undefined, { signal });
          await logWait(waitStarted, `back-off before write attempt ${action.attempt}`);
        }
        attempt = action.attempt;
        let requestId: string;
        if (begun && attempt === 1) {
          requestId = begun.requestId;
          begun = undefined;
        } else {
          await deps.throttle?.wait(signal);
          requestId = writeRequestId(base, attempt);
          // The baseline is never replaced: the row keeps the first one (see beginWrite).
          await repo.beginWrite(identity, { attempt, requestId, snapshot: baseline! });
          requestIds.push(requestId);
        }
        reads = 0;
        const wlog = log.child({ partnerRequestId: requestId, attempt });
        // The lock's session died (connection lost): another process may take the command over,
        // so this one must not send. The row is in_flight: whoever takes it reads back first.
        if (!lock.held) throw new GuardInterruptedError('command lock lost before the write was sent');
        let failure: FailureInfo;
        try {
          const result = await strategy.write(input.command, requestId);
          // The outcome is known now; its commit runs while the caller publishes it.
          const settled = repo.applied(identity, attempt, result.status).then(() => undefined);
          settled.catch(() => undefined);
          const now = new Date();
          record = {
            ...record,
            state: 'applied',
            attempts: attempt,
            requestIds,
            snapshot: baseline,
            updatedAt: now,
            finishedAt: now,
          };
          return { ...counted(), settled };
        } catch (error) {
          failure = classifyFailure(error);
          wlog.warn(
            { kind: failure.kind, status: failure.status, code: failure.code, err: error },
            'write failed',
          );
          await repo.endWrite(identity, attempt, {
            result: failure.kind,
            status: failure.status,
            code: failure.code,
            message: failure.message,
          });
        }
        d = decide(d.state, { type: 'answered', at: Date.now(), failure }, limits);
        continue;
      }
    }
  }
}

/** Why a read-back reached its verdict, in the words of the guard's rule (DESIGN.md). */
function verdictReason(verdict: Verdict, missing: string | null): string {
  if (verdict === 'applied') return 'the target state is reached: the write is visible on the record';
  if (verdict === 'not_applied')
    return 'the record is unchanged since the snapshot taken before the first write';
  return missing
    ? `cannot tell: ${missing}`
    : 'cannot tell: the record changed since the snapshot, but not as this write would';
}

/** The snapshot read as a step: its request ids (`.a<n>.r<k>`), what it found, and when. */
function snapshotStep(
  /** The command's request-id base. */
  base: string,
  attempt: number,
  reads: number,
  snapshot: Snapshot,
  startedAt: Date,
  readsBefore = 0,
): StepInput {
  const ids = Array.from({ length: Math.max(reads - readsBefore, 1) }, (_, i) =>
    readRequestId(base, attempt, readsBefore + i + 1),
  );
  return {
    attempt,
    requestId: ids[0]!,
    kind: 'snapshot',
    result: snapshot.found ? 'read' : 'not found',
    message: [
      snapshot.found
        ? `status ${snapshot.status ?? '–'}, updated_at ${snapshot.updated_at ?? '–'}`
        : 'no such record',
      ids.length > 1 ? `requests ${ids.join(', ')}` : null,
    ]
      .filter(Boolean)
      .join('; '),
    startedAt,
    finishedAt: new Date(),
  };
}
