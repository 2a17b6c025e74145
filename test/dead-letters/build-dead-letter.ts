import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { Db } from '../../src/db/prisma.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { toDeadLetterHeaders, type DeadLetterInfo } from '../../src/dead-letters/dead-letter-headers.js';
import { fromDeadLetterHeaders } from '../../src/dead-letters/dead-letter-headers.js';
import { insertDeadLetter } from '../../src/dead-letters/dead-letter-repository.js';
import { TOPICS } from '../../src/kafka/topics.js';

/** A dead-lettered application decision, as the consumers write it: value + headers. */
/** The Partner API's whole error of a declined card (issue 21's shape), as a letter keeps it. */
export const DECLINED_CARD = {
  code: 'processor_card_error',
  status: 402,
  message: 'Your card was declined.',
  request_id: 'pay-1.a1',
  processor_code: 'card_declined',
  processor_decline_code: 'insufficient_funds',
};

export function buildDecisionLetter(
  prefix: string,
  overrides: Partial<DeadLetterInfo> & { decisionId?: string; applicationId?: string; data?: unknown } = {},
) {
  const decisionId = overrides.decisionId ?? `dec-${randomUUID()}`;
  const applicationId = overrides.applicationId ?? `app-${randomUUID().slice(0, 8)}`;
  const data = overrides.data ?? {
    decision_id: decisionId,
    application_id: applicationId,
    decision: 'approve',
  };
  const value = JSON.stringify(
    toCloudEvent({
      id: `evt-${randomUUID()}`,
      source: 'test/back-office',
      type: COMMAND_TYPES.applicationDecision,
      subject: applicationId,
      data,
    }),
  );
  const info: DeadLetterInfo = {
    originalTopic: `${prefix}${TOPICS.applicationDecisions}`,
    originalPartition: 0,
    originalOffset: '42',
    originalKey: applicationId,
    reason: 'unverified',
    errorCode: 'api_error',
    errorStatus: 503,
    errorMessage: 'Partner API answered 503 and the read-back was inconclusive',
    attempts: 3,
    firstFailureAt: new Date('2026-11-20T10:00:00Z'),
    lastFailureAt: new Date('2026-11-20T10:05:00Z'),
    partnerRequestIds: [`req-${randomUUID()}`, `req-${randomUUID()}`],
    consumerGroup: `${prefix}rentbridge.application-decisions`,
    commandId: decisionId,
    ...overrides,
  };
  const headers = {
    ...toDeadLetterHeaders(info),
    'content-type': 'application/cloudevents+json; charset=UTF-8',
  };
  return { key: applicationId, value, headers, info, decisionId, applicationId };
}

let offset = 1000;

/** Stores a letter straight in `dead_letters` (the indexer's job), for tests of search and redrive. */
export async function seedLetter(db: Db, prefix: string, letter: ReturnType<typeof buildDecisionLetter>) {
  const dlqTopic = `${prefix}${TOPICS.dlq(TOPICS.applicationDecisions)}`;
  const o = String(offset++);
  await insertDeadLetter(db, {
    dlqTopic,
    partition: 0,
    offset: o,
    key: letter.key,
    value: letter.value,
    headers: letter.headers,
    info: fromDeadLetterHeaders(letter.headers),
  });
  const row = await db.deadLetter.findUniqueOrThrow({
    where: { dlqTopic_partition_offset: { dlqTopic, partition: 0, offset: o } },
  });
  return Number(row.id);
}

/** The guard's row for a command, as the guard engineer's code would leave it. */
export async function seedGuardRow(
  db: Db,
  commandId: string,
  state: string,
  targetId = 'app-1',
  source = 'test/back-office',
) {
  await db.command.create({
    data: {
      // The identity of the command in buildDecisionLetter's value (its CloudEvent source).
      source,
      commandId,
      commandType: 'application_decision',
      requestIdBase: `${source}-${commandId}`.replace(/[^A-Za-z0-9_.-]/g, '_'),
      targetId,
      state,
      payload: {},
      attempts: 2,
      requestIds: ['req-a', 'req-b'],
      lastError: { code: 'api_error', status: 503 },
      snapshot: { status: 'pending', updated_at: '2026-11-20T09:59:00Z' },
      finishedAt: new Date(),
      attemptLog: {
        create: [
          { attempt: 1, requestId: 'req-a', kind: 'write', result: 'error', status: 503, code: 'api_error' },
          { attempt: 2, requestId: 'req-b', kind: 'read_back', result: 'inconclusive' },
        ],
      },
    },
  });
}

export async function produceDeadLetter(
  kafka: Kafka,
  topic: string,
  letter: ReturnType<typeof buildDecisionLetter>,
) {
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({
      topic,
      messages: [{ key: letter.key, value: letter.value, headers: letter.headers }],
    });
  } finally {
    await producer.disconnect();
  }
}
