import { setTimeout as sleep } from 'node:timers/promises';
import type { Prisma } from '@prisma/client';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics.js';
import { classifyFailure, type FailureInfo } from './classify-failure.js';
import type { CommandLock, CommandLocks } from './command-lock.js';
import type { CommandRecord, CommandRepository, FinalState } from './command-repository.js';
import { isFinal } from './command-repository.js';
import type { ReadBackStrategy, ReadContext, Snapshot, Verdict } from './read-back.js';
import { readRequestId, writeRequestId } from './request-ids.js';
import type { ThrottleGate } from './throttle-gate.js';

/**
 * The guarded write (DESIGN.md, "The guarded write"): the Partner API takes no idempotency key
 * and a write that failed with a 5xx or timed out may have landed (spec 7.4), so a write is never
 * retried on a guess. Per command id a row walks:
 *
 *   pending ─snapshot─▶ in_flight (committed) ─write─▶ 2xx: applied
 *                                              ├─ 429: pending, whole consumer waits Retry-After
 *                                              ├─ 401 (the client already renewed once): rejected
 *                                              ├─ 409 invalid_state_transition: read → already_applied | rejected
 *                                              ├─ 409 lock_failed: pending, read again, retry (bounded → exhausted)
 *                                              ├─ other 4xx: rejected
 *                                              └─ 5xx / time-out / network / restart in in_flight: READ BACK
 *                                                   applied → applied; unchanged → pending, retry with
 *                                                   back-off (bounded → exhausted); else → unverified
 *
 * One writer per command (docs/decisions/011-one-writer-per-command.md): the whole walk runs
 * under the command's lock (src/guard/command-lock.ts), which dies with its process. A process
 * that meets a command another one is working on (a Kafka rebalance redelivered it) waits for
 * the lock, then walks the row as the holder left it: final → publish again, write nothing;
 * still in_flight → the holder died mid-write: read back.
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
   * Wait before reading back after a 5xx, time-out or network error: a server that is slow,
   * not dead, may still be applying the write. Default 1000 ms.
   */
  readBackDelayMs?: number;
  /**
   * A row found `in_flight` (a crashed run) is read back only this long after its write was
   * sent, so the read cannot race the write still being processed by the partner. Keep it above
   * the client's time-out. Default 15 s.
   */
  inFlightSettleMs?: number;
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

export interface GuardInput<C> {
  commandId: string;
  /** `application_decision` or `rental_payment`. */
  commandType: string;
  targetId: string;
  command: C;
}

export interface GuardResult {
  record: CommandRecord;
  /** The row was already final: nothing was written this time (a redelivery or a redrive). */
  alreadyFinal: boolean;
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
  inFlightSettleMs: 15_000,
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
  const { commandId } = input;
  const log = deps.logger.child({ commandId });

  let attempt = 0;
  let reads = 0;
  const ctx: ReadContext = { nextReadId: () => readRequestId(commandId, attempt, ++reads) };
  const backoff = (n: number) =>
    Math.min(options.maxBackoffMs, options.backoffMs * 2 ** Math.max(0, n - 1)) *
    (0.75 + Math.random() * 0.5);

  const counted = (): GuardResult => {
    metrics.commands.inc({ command: input.commandType, status: record.state });
    log.info(
      { state: record.state, attempts: record.attempts, partnerRequestId: record.requestIds.at(-1) },
      'command final',
    );
    return { record, alreadyFinal: false, settled: Promise.resolve() };
  };
  const finish = async (state: FinalState, failure?: FailureInfo): Promise<GuardResult> => {
    record = await repo.finish(commandId, state, failure ? asFailure(failure) : undefined);
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
    const requestId = readRequestId(commandId, attempt, reads + 1);
    const verdict = await read('read-back', () => strategy.verdict(input.command, snapshot, ctx));
    metrics.readBacks.inc({ command: input.commandType, verdict });
    await repo.logRead(commandId, { attempt, requestId, kind: 'read_back', result: verdict });
    log.info({ verdict, attempt }, 'read back');
    return verdict;
  };

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
  const taking = deps.locks.tryAcquire(commandId);
  // Its failure (PostgreSQL down) surfaces at `await taking` below; until then a handler must be
  // attached, or the rejection would be unhandled and end the process.
  taking.catch(() => undefined);
  let taken: CommandLock | null = null;
  try {
    const first = await read('snapshot', () => strategy.snapshot(input.command, ctx)).catch(
      (error: unknown) => {
        if (signal?.aborted) throw error;
        log.warn({ err: error }, 'snapshot failed; looking the command up first');
        return undefined;
      },
    );
    if (first) {
      await deps.throttle?.wait(signal);
      const requestId = writeRequestId(commandId, 1);
      created = await repo.createInFlight({ ...input, payload, requestId, snapshot: first });
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
    taken = await deps.locks.acquire(commandId, {
      waitMs: options.lockWaitMs,
      ...(signal && { signal }),
    });
    if (!taken) throw new GuardBusyError(`command ${commandId} is still being worked on by another process`);
    owned.lock = taken;
    log.info('command lock taken after waiting');
  }
  const lock: CommandLock = taken;
  let record: CommandRecord =
    created ??
    (await repo.ensure({
      commandId,
      commandType: input.commandType,
      targetId: input.targetId,
      payload,
    }));
  if (!begun && isFinal(record.state)) return { record, alreadyFinal: true, settled: Promise.resolve() };
  attempt = record.attempts;
  const requestIds = [...record.requestIds];

  let retries = 0;
  let lockRetries = 0;
  let throttles = 0;

  if (!begun && record.state === 'in_flight') {
    // A previous run committed in_flight and never recorded the answer (crash, kill, lost
    // connection): the write may have landed. Read back; never write again on a guess.
    early = undefined;
    log.warn({ attempt }, 'command found in flight: reading back');
    const lost = {
      kind: 'uncertain',
      error: null,
      code: 'interrupted',
      status: null,
      message: 'write interrupted before its answer was recorded',
      requestId: null,
      retryAfterSeconds: null,
    } as const;
    await repo.endWrite(commandId, attempt, { result: 'interrupted' });
    const settleMs = record.updatedAt.getTime() + options.inFlightSettleMs - Date.now();
    if (settleMs > 0) await sleep(settleMs, undefined, { signal });
    if (!record.snapshot) return finish('unverified', lost);
    const verdict = await readBack(record.snapshot);
    if (verdict === 'applied') return finish('applied');
    if (verdict === 'unknown') return finish('unverified', lost);
    retries++;
    await repo.markPending(commandId, asFailure(lost));
    if (retries > options.maxRetries) return finish('exhausted', lost);
  }

  for (;;) {
    let snapshot: Snapshot;
    let requestId: string;
    if (begun) {
      ({ snapshot, requestId } = begun);
      begun = undefined;
    } else {
      await deps.throttle?.wait(signal);
      snapshot = await (early ?? read('snapshot', () => strategy.snapshot(input.command, ctx)));
      early = undefined;
      attempt++;
      requestId = writeRequestId(commandId, attempt);
      await repo.beginWrite(commandId, { attempt, requestId, snapshot });
      requestIds.push(requestId);
    }
    reads = 0;
    const wlog = log.child({ partnerRequestId: requestId, attempt });
    // The lock's session died (connection lost): another process may take the command over, so
    // this one must not send. The row is in_flight: whoever takes it reads back first.
    if (!lock.held) throw new GuardInterruptedError('command lock lost before the write was sent');
    let failure: FailureInfo;
    try {
      const result = await strategy.write(input.command, requestId);
      // The outcome is known now; its commit runs while the caller publishes it.
      const settled = repo.applied(commandId, attempt, result.status).then(() => undefined);
      settled.catch(() => undefined);
      const now = new Date();
      record = {
        ...record,
        state: 'applied',
        attempts: attempt,
        requestIds,
        snapshot,
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
      await repo.endWrite(commandId, attempt, {
        result: failure.kind,
        status: failure.status,
        code: failure.code,
        message: failure.message,
      });
    }

    switch (failure.kind) {
      case 'throttled': {
        // Spec 7.4.2: a throttled request was not applied.
        await repo.markPending(commandId, asFailure(failure));
        if (++throttles > options.maxThrottles) return finish('exhausted', failure);
        const waitMs = (failure.retryAfterSeconds ?? 1) * 1000;
        await deps.throttle?.pause(new Date(Date.now() + waitMs));
        if (!deps.throttle) await sleep(waitMs, undefined, { signal });
        continue;
      }
      case 'unauthenticated':
        // Not applied; the client has already renewed its token and repeated the write once
        // (DESIGN: "renew the token once"), so a 401 here means the key itself is refused.
        return finish('rejected', failure);
      case 'lock_failed':
        await repo.markPending(commandId, asFailure(failure));
        if (++lockRetries > options.maxLockRetries) return finish('exhausted', failure);
        await sleep(backoff(lockRetries), undefined, { signal });
        continue; // the loop reads the record again before the next write
      case 'invalid_state':
        return (await readBack(snapshot)) === 'applied'
          ? finish('already_applied', failure)
          : finish('rejected', failure);
      case 'rejected':
        return finish('rejected', failure);
      case 'uncertain': {
        if (options.readBackDelayMs > 0) await sleep(options.readBackDelayMs, undefined, { signal });
        const verdict = await readBack(snapshot);
        if (verdict === 'applied') return finish('applied', failure);
        if (verdict === 'unknown') return finish('unverified', failure);
        await repo.markPending(commandId, asFailure(failure));
        if (++retries > options.maxRetries) return finish('exhausted', failure);
        await sleep(backoff(retries), undefined, { signal });
        continue;
      }
    }
  }
}
