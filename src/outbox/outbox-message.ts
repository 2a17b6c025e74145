import type { Message } from 'kafkajs';
import { CLOUDEVENT_CONTENT_TYPE, toCloudEvent } from '../contracts/cloudevent.js';
import { withTraceExtension } from '../telemetry.js';

/**
 * The Kafka message an outbox row becomes, and its size: the relay sends it, the receiver
 * refuses at ingest an event the relay could never send (docs/decisions/014).
 */

/** The fields of an outbox row its message is made of. */
export interface OutboxMessageRow {
  eventId: string;
  key: string;
  type: string;
  source: string;
  subject: string | null;
  data: unknown;
  headers: Record<string, string>;
  createdAt: Date;
  /**
   * The message value built when the row was written (`messageValue`), as bytes or as the text
   * they encode (UTF-8); absent for older rows.
   */
  messageValue?: Buffer | string | null;
}

/** Most bytes per Kafka request the relay sends by default (RELAY_MAX_BATCH_BYTES). */
export const DEFAULT_MAX_BATCH_BYTES = 900_000;
/** Record and request framing Kafka adds to each message, roughly: a safety margin. */
const MESSAGE_OVERHEAD_BYTES = 100;

/** The bytes a message takes in a produce request (value, key, headers, framing). */
export function messageBytes(message: Message): number {
  let n = MESSAGE_OVERHEAD_BYTES;
  n += typeof message.value === 'string' ? Buffer.byteLength(message.value) : (message.value?.length ?? 0);
  n += typeof message.key === 'string' ? Buffer.byteLength(message.key) : (message.key?.length ?? 0);
  for (const [k, v] of Object.entries(message.headers ?? {})) {
    n +=
      Buffer.byteLength(k) +
      (typeof v === 'string' ? Buffer.byteLength(v) : Buffer.isBuffer(v) ? v.length : 0);
  }
  return n;
}

/**
 * The outbox type of a tombstone: a row of this type becomes a message with the row's key and a
 * null value, no CloudEvent. On a compacted partner.<resource> changelog it follows a `removed`
 * event, so compaction drops the record (docs/decisions/024). Never a CloudEvent type on the wire.
 */
export const TOMBSTONE_TYPE = 'rentbridge.tombstone';

/**
 * The value of the message an outbox row becomes: the CloudEvent's JSON bytes, or null for a
 * tombstone. Writers store it with the row (`message_value`), so the relay only reads and sends
 * bytes; the row's time is in it, so a repeat is byte-for-byte the same event.
 */
export function messageValue(row: OutboxMessageRow): Buffer | null {
  const text = messageValueText(row);
  return text === null ? null : Buffer.from(text);
}

/** `messageValue` as text (the receiver's one-statement writer passes it inside its JSON batch). */
export function messageValueText(row: OutboxMessageRow): string | null {
  if (row.type === TOMBSTONE_TYPE) return null;
  const event = toCloudEvent({
    id: row.eventId,
    source: row.source,
    type: row.type,
    subject: row.subject,
    time: row.createdAt,
    data: row.data,
  });
  return JSON.stringify(withTraceExtension(event, row.headers));
}

/**
 * An outbox row as the Kafka message the relay sends: a CloudEvent in structured mode (its value
 * as written with the row, or built now for a row written before values were stored), or a
 * tombstone.
 */
export function toKafkaMessage(row: OutboxMessageRow): Message {
  // The row's own headers only (trace context): a null value is no CloudEvent, so no ce_* headers.
  // Object.assign, not a spread: spreading a JSON-parsed object into a literal took ~1.8 µs per
  // message in the relay's drain, assigning ~0.2 (docs/decisions/001).
  const headers: Record<string, string> = Object.assign({}, row.headers);
  if (row.type === TOMBSTONE_TYPE) return { key: row.key, value: null, headers };
  headers['content-type'] = CLOUDEVENT_CONTENT_TYPE;
  headers.ce_id = row.eventId;
  headers.ce_type = row.type;
  return { key: row.key, value: row.messageValue ?? messageValue(row), headers };
}
