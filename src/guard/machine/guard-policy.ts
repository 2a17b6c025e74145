import { backoffDelay } from '../../backoff.js';
import type { FailureInfo } from './classify-failure.js';
import type { FinalState, FailureInput, StepInput } from './command-record.js';
import { readRequestId, writeRequestId } from './command-request-ids.js';
import type { Snapshot, Verdict } from '../read-backs/read-back.js';
import type { Decision, GuardAction, MachineLimits, MachineState, Wait } from './guard-vocabulary.js';

export * from './guard-vocabulary.js';

/**
 * The pure policy the guard machine's transitions share: back-off with jitter, the processing
 * bound, the next write and read-back with their waits, the steps kept, the final state's error.
 */

/** Back-off before retry `n` (1-based), without jitter. */
export function backoffMs(limits: MachineLimits, n: number): number {
  return backoffDelay({ initialRetryTime: limits.backoffMs, maxRetryTime: limits.maxBackoffMs }, n);
}

/** A back-off spread ±25% by `rand` (0.5: exactly `ms`). */
export function jittered(ms: number, rand = 0.5): number {
  return ms * (0.75 + rand * 0.5);
}

/** When a read-back may first prove "not applied": the bound past the last send. */
export function boundAt(state: MachineState, limits: MachineLimits): number {
  return (state.sentBy ?? 0) + limits.maxProcessingMs;
}

/** The failure as the row keeps it; an `unverified` one says what evidence the read-back lacked. */
export function rowError(
  failure: FailureInfo | null,
  final: FinalState,
  missing: string | null,
): FailureInput | null {
  if (!failure) return null;
  let f = failure;
  if (final === 'unverified' && missing) {
    const message = `read-back could not tell: ${missing}; the write: ${failure.message}`;
    // The outcome shows the Partner API's error whole; its message says why too.
    f = { ...failure, message, error: failure.error && { ...failure.error, message } };
  }
  return { code: f.code, status: f.status, message: f.message, ...(f.error && { partner_error: f.error }) };
}

export type FinishAction = Extract<GuardAction, { type: 'finish' }>;

export function finish(
  state: MachineState,
  final: FinalState,
  failure: FailureInfo | null,
): { state: MachineState; action: FinishAction } {
  return {
    state: { ...state, row: final, checking: null },
    action: {
      type: 'finish',
      state: final,
      failure,
      alreadyFinal: false,
      error: rowError(failure, final, state.missing),
    },
  };
}

/** The next write, after `waitMs` (Retry-After when `throttled`, else a back-off spread by `rand`). */
export function write(
  state: MachineState,
  waitMs: number,
  pending: FailureInfo | null,
  throttled = false,
  at = 0,
  rand?: number,
): Decision {
  const attempt = state.attempts + 1;
  const requestId = writeRequestId(state.base, attempt);
  const begun = state.begun && attempt === 1;
  const record =
    state.record && !begun
      ? { ...state.record, requestIds: [...state.record.requestIds, requestId] }
      : state.record;
  const waited = throttled ? waitMs : Math.round(jittered(waitMs, rand));
  const wait: Wait | undefined =
    waitMs > 0
      ? {
          until: at + waited,
          throttled,
          step: {
            attempt: state.attempts,
            requestId: writeRequestId(state.base, Math.max(state.attempts, 1)),
            message: throttled
              ? `throttled: 429 Retry-After, ${waitMs} ms, for every process sharing the budget`
              : `back-off before write attempt ${attempt}`,
          },
        }
      : undefined;
  return {
    state: { ...state, row: 'in_flight', checking: null, failure: null, reads: 0, readIds: 0, record },
    action: {
      type: 'write',
      attempt,
      waitMs,
      pending,
      throttled,
      requestId,
      begun,
      ...(pending && { markPending: rowError(pending, 'exhausted', null)! }),
      ...(wait && { wait }),
    },
  };
}

/** A read-back at `notBefore`, waited for (and the wait kept as a step) when it is later than `at`. */
export function readBack(
  state: MachineState,
  limits: MachineLimits,
  at: number,
  notBefore: number,
  whyNow: 'early' | 'bound',
): Decision {
  const message =
    whyNow === 'bound'
      ? `processing bound: "not applied" may be concluded only from a read made PARTNER_MAX_PROCESSING_MS (${limits.maxProcessingMs} ms) after the write's call ended`
      : 'before an early read-back: it can prove "applied" before the processing bound';
  const step = {
    attempt: state.attempts,
    requestId: writeRequestId(state.base, Math.max(state.attempts, 1)),
    message,
  };
  return {
    state,
    action: {
      type: 'read_back',
      notBefore,
      whyNow,
      ...(notBefore > at && {
        wait: { until: notBefore, throttled: false, step },
        ...(whyNow === 'bound' && {
          note: {
            level: 'info' as const,
            msg: 'write unanswered: waiting out the processing bound before concluding',
            fields: { waitMs: notBefore - at, attempt: state.attempts },
          },
        }),
      }),
    },
  };
}

/** The next read-back of an uncertain write: early reads double their gap, the last is at the bound. */
export function nextRead(state: MachineState, limits: MachineLimits, at: number): Decision {
  const bound = boundAt(state, limits);
  const early = (state.sentBy ?? at) + limits.readBackDelayMs * 2 ** state.reads;
  const notBefore = Math.max(at, Math.min(early, bound));
  return readBack(state, limits, at, notBefore, notBefore >= bound ? 'bound' : 'early');
}

/** The read under way as a step: its request ids (`.a<n>.r<k>`), what it found, and when. */
export function readStep(
  state: MachineState,
  kind: 'snapshot' | 'read_back',
  readIds: number,
  startedAt: number,
  result: string,
  message: string,
): StepInput {
  const from = state.reading?.from ?? state.readIds;
  const ids = Array.from({ length: Math.max(readIds - from, 1) }, (_, i) =>
    readRequestId(state.base, state.attempts, from + i + 1),
  );
  const many = kind === 'snapshot' && ids.length > 1 ? `; requests ${ids.join(', ')}` : '';
  return {
    attempt: state.attempts,
    requestId: ids[0]!,
    kind,
    result,
    message: message + many,
    startedAt: new Date(state.reading?.at ?? startedAt),
  };
}

/** What a snapshot found, in a step's words. */
export function snapshotWords(snapshot: Snapshot): { result: string; message: string } {
  return snapshot.found
    ? {
        result: 'read',
        message: `status ${snapshot.status ?? '–'}, updated_at ${snapshot.updated_at ?? '–'}`,
      }
    : { result: 'not found', message: 'no such record' };
}

/** Why a read-back reached its verdict, in the words of the guard's rule (DESIGN.md). */
export function verdictReason(verdict: Verdict, missing: string | null): string {
  if (verdict === 'applied') return 'the target state is reached: the write is visible on the record';
  if (verdict === 'not_applied')
    return 'the record is unchanged since the snapshot taken before the first write';
  return missing
    ? `cannot tell: ${missing}`
    : 'cannot tell: the record changed since the snapshot, but not as this write would';
}
