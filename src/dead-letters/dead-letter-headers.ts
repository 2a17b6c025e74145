import type { IHeaders } from 'kafkajs';
import { cloudEventHeaders } from '../contracts/cloudevent.js';
import type { OutcomeError } from '../partner/errors.js';

/**
 * The headers every dead letter carries (written by the consumers, read by the dead-letter
 * indexer and `rentbridge dlq`). The value of a dead letter is the original message's value,
 * byte for byte, and its headers are the original's (`content-type`, `ce_id`, `ce_type`,
 * `webhook-id`, `request-id`: the CloudEvents Kafka binding and the trail) beside the `dlq-*` ones.
 */

/**
 * `conflicting_duplicate`: a command whose identity (source + type + id) already belongs to a
 * command of other content; refused, nothing written (docs/decisions/020-command-identity.md).
 */
export const DEAD_LETTER_REASONS = [
  'invalid_message',
  'rejected',
  'exhausted',
  'unverified',
  'conflicting_duplicate',
] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

export interface DeadLetterInfo {
  originalTopic: string;
  originalPartition: number;
  originalOffset: string;
  originalKey: string | null;
  reason: DeadLetterReason;
  errorCode?: string | null;
  errorStatus?: number | null;
  errorMessage?: string | null;
  /** The Partner API's error whole (the outcome's `error`), as JSON in `dlq-error`. */
  error?: OutcomeError | null;
  attempts: number;
  firstFailureAt: Date;
  lastFailureAt: Date;
  /** The X-Request-Id of every Partner API attempt, in order. */
  partnerRequestIds: string[];
  consumerGroup: string;
  commandId?: string | null;
  /** With commandId and commandType, the command's identity (src/contracts/command-contracts.ts). */
  commandSource?: string | null;
  commandType?: string | null;
}

export const DLQ_HEADER = {
  originalTopic: 'dlq-original-topic',
  originalPartition: 'dlq-original-partition',
  originalOffset: 'dlq-original-offset',
  originalKey: 'dlq-original-key',
  reason: 'dlq-reason',
  errorCode: 'dlq-error-code',
  errorStatus: 'dlq-error-status',
  errorMessage: 'dlq-error-message',
  error: 'dlq-error',
  attempts: 'dlq-attempts',
  firstFailureAt: 'dlq-first-failure-at',
  lastFailureAt: 'dlq-last-failure-at',
  partnerRequestIds: 'dlq-partner-request-ids',
  consumerGroup: 'dlq-consumer-group',
  commandId: 'dlq-command-id',
  commandSource: 'dlq-command-source',
  commandType: 'dlq-command-type',
} as const;

/** Headers a redrive adds to the republished message. */
export const REDRIVE_HEADER = {
  redrivenFrom: 'redrive-dead-letter-id',
  redrivenAt: 'redrive-at',
  redrivenBy: 'redrive-by',
} as const;

export function toDeadLetterHeaders(info: DeadLetterInfo): Record<string, string> {
  const h: Record<string, string> = {
    [DLQ_HEADER.originalTopic]: info.originalTopic,
    [DLQ_HEADER.originalPartition]: String(info.originalPartition),
    [DLQ_HEADER.originalOffset]: info.originalOffset,
    [DLQ_HEADER.reason]: info.reason,
    [DLQ_HEADER.attempts]: String(info.attempts),
    [DLQ_HEADER.firstFailureAt]: info.firstFailureAt.toISOString(),
    [DLQ_HEADER.lastFailureAt]: info.lastFailureAt.toISOString(),
    [DLQ_HEADER.partnerRequestIds]: info.partnerRequestIds.join(','),
    [DLQ_HEADER.consumerGroup]: info.consumerGroup,
  };
  if (info.originalKey != null) h[DLQ_HEADER.originalKey] = info.originalKey;
  if (info.errorCode) h[DLQ_HEADER.errorCode] = info.errorCode;
  if (info.errorStatus != null) h[DLQ_HEADER.errorStatus] = String(info.errorStatus);
  if (info.errorMessage) h[DLQ_HEADER.errorMessage] = info.errorMessage.slice(0, 2000);
  if (info.commandId) h[DLQ_HEADER.commandId] = info.commandId;
  if (info.commandSource != null) h[DLQ_HEADER.commandSource] = info.commandSource;
  if (info.commandType) h[DLQ_HEADER.commandType] = info.commandType;
  // Bounded like the outcome's (its `extra` is at most 4 KB); JSON, read back by fromDeadLetterHeaders.
  if (info.error) h[DLQ_HEADER.error] = JSON.stringify(info.error).slice(0, 16_384);
  return h;
}

/**
 * A dead letter's headers: the original message's own (minus any `dlq-*` of an earlier letter),
 * the CloudEvents binding's headers of its value when the value is a CloudEvent (a command
 * produced without them gets them here), then the `dlq-*` ones describing this failure.
 */
export function withOriginalHeaders(
  original: IHeaders | undefined,
  dlqHeaders: Record<string, string>,
  event?: { id: string; type: string } | null,
): IHeaders {
  const headers: IHeaders = {};
  for (const [name, value] of Object.entries(original ?? {})) {
    if (value !== undefined && !name.startsWith('dlq-')) headers[name] = value;
  }
  return { ...headers, ...(event && cloudEventHeaders(event)), ...dlqHeaders };
}

function parseError(text: string | undefined): OutcomeError | null {
  if (!text) return null;
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as OutcomeError) : null;
  } catch {
    return null; // cut at the bound, or written by hand
  }
}

function headerString(headers: IHeaders | undefined, name: string): string | undefined {
  const v = headers?.[name];
  if (v === undefined) return undefined;
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined ? undefined : one.toString();
}

/** Reads the dead-letter headers back; missing ones are null (a letter written by hand, say). */
export function fromDeadLetterHeaders(headers: IHeaders | undefined): Partial<DeadLetterInfo> & {
  all: Record<string, string>;
} {
  const all: Record<string, string> = {};
  for (const name of Object.keys(headers ?? {})) {
    const v = headerString(headers, name);
    if (v !== undefined) all[name] = v;
  }
  const get = (k: keyof typeof DLQ_HEADER) => all[DLQ_HEADER[k]];
  const num = (v: string | undefined) =>
    v === undefined || v === '' || Number.isNaN(Number(v)) ? undefined : Number(v);
  const date = (v: string | undefined) => (v && !Number.isNaN(Date.parse(v)) ? new Date(v) : undefined);
  return {
    all,
    originalTopic: get('originalTopic'),
    originalPartition: num(get('originalPartition')),
    originalOffset: get('originalOffset'),
    originalKey: get('originalKey') ?? null,
    reason: DEAD_LETTER_REASONS.find((r) => r === get('reason')),
    errorCode: get('errorCode') ?? null,
    errorStatus: num(get('errorStatus')) ?? null,
    errorMessage: get('errorMessage') ?? null,
    error: parseError(get('error')),
    attempts: num(get('attempts')),
    firstFailureAt: date(get('firstFailureAt')),
    lastFailureAt: date(get('lastFailureAt')),
    partnerRequestIds: get('partnerRequestIds')?.split(',').filter(Boolean) ?? [],
    consumerGroup: get('consumerGroup'),
    commandId: get('commandId') ?? null,
    commandSource: get('commandSource') ?? null,
    commandType: get('commandType') ?? null,
  };
}
