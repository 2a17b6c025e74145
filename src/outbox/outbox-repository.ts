import { randomUUID } from 'node:crypto';
import type { Prisma } from '@prisma/client';
import { messageValue } from './outbox-message.js';

/**
 * The transactional outbox. Writers call `insertOutboxRows` inside their own transaction (state
 * changes through `recordChanges`, src/changes/record-changes.ts; the receiver's commands and
 * unrouted events through its one-statement writer, src/receiver/message-writer.ts) and wake the
 * relay after the commit (src/outbox/relay-waker.ts); the relay publishes the rows to Kafka as
 * CloudEvents and marks them sent.
 */

/** The Prisma transaction client passed to `db.$transaction(async (tx) => ...)`. */
export type Tx = Prisma.TransactionClient;

/** Channel of the NOTIFY that wakes the relay after a commit. */
export const OUTBOX_CHANNEL = 'rentbridge_outbox';

export interface OutboxMessageInput {
  /** Logical topic, without KAFKA_TOPIC_PREFIX (see src/kafka/topics.ts). */
  topic: string;
  /** Kafka key: the id of the record (or command target) the event is about. */
  key: string;
  /** CloudEvent `type`, e.g. `partner.application.updated`, `rentbridge.command.rental-payment`. */
  type: string;
  /** CloudEvent `source`, e.g. `/webhooks/pms/acme`, `/poller/applications`. */
  source: string;
  /** CloudEvent `subject`, e.g. the record id. */
  subject?: string;
  /** CloudEvent `data`. */
  data: Prisma.InputJsonValue;
  /** Extra Kafka headers (correlation ids such as `webhook-id`, `partner-request-id`). */
  headers?: Record<string, string>;
  /** CloudEvent id; generated when absent. Stable across every retry of the row. */
  eventId?: string;
}

/**
 * Writes outbox rows in the caller's transaction. It does not notify the relay: a NOTIFY in the
 * transaction would hold PostgreSQL's cluster-wide notify lock through the commit's WAL flush
 * (decision 001); the caller wakes the relay after its commit.
 */
export async function insertOutboxRows(
  tx: Tx,
  messages: OutboxMessageInput[],
): Promise<{ id: bigint; eventId: string }[]> {
  if (messages.length === 0) return [];
  const createdAt = new Date();
  const rows = await tx.outboxMessage.createManyAndReturn({
    data: messages.map((m) => {
      const row = {
        eventId: m.eventId ?? randomUUID(),
        topic: m.topic,
        key: m.key,
        type: m.type,
        source: m.source,
        subject: m.subject ?? null,
        data: m.data,
        headers: m.headers ?? {},
        createdAt,
      };
      // The message the relay will send, built now: the relay only reads and sends its bytes.
      const value = messageValue(row);
      return value ? { ...row, messageValue: value as Uint8Array<ArrayBuffer> } : row;
    }),
    select: { id: true, eventId: true },
  });
  return rows;
}
