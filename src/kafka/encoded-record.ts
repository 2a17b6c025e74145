import type { IHeaders, Message } from 'kafkajs';

/**
 * A Kafka record's key, value and headers encoded once, in one buffer, by the relay
 * (docs/decisions/001): kafkajs's own encoder allocates a zeroed 512-byte buffer per record and
 * per header, most of what a plain producer spends per message. kafkajs, patched by
 * `patches/kafkajs+2.2.4.patch` (applied by `npm ci`), writes a batch of such records into one
 * buffer, adding only the fields that depend on a record's place in the batch (length,
 * attributes, timestamp and offset deltas); unpatched, it ignores the symbol and encodes the
 * messages itself, to the same bytes.
 */
export const ENCODED_BODY = Symbol.for('kafkajs.encodedRecordBody');

type Encoded = Message & { [ENCODED_BODY]?: Buffer };

/** Zigzag varint size (Kafka's signed varint) of a 32-bit integer. */
function varIntSize(value: number): number {
  let zz = ((value << 1) ^ (value >> 31)) >>> 0;
  let bytes = 1;
  while (zz > 0x7f) {
    bytes += 1;
    zz >>>= 7;
  }
  return bytes;
}

function writeVarInt(buf: Buffer, at: number, value: number): number {
  let zz = ((value << 1) ^ (value >> 31)) >>> 0;
  while (zz > 0x7f) {
    buf[at++] = (zz & 0x7f) | 0x80;
    zz >>>= 7;
  }
  buf[at++] = zz;
  return at;
}

type Field = string | Buffer | null | undefined;

/** Bytes of a field with its varint length (-1: null). */
function fieldSize(field: Field): number {
  if (field == null) return 1;
  const n = typeof field === 'string' ? Buffer.byteLength(field) : field.length;
  return varIntSize(n) + n;
}

function writeField(buf: Buffer, at: number, field: Field): number {
  if (field == null) return writeVarInt(buf, at, -1);
  if (typeof field === 'string') {
    at = writeVarInt(buf, at, Buffer.byteLength(field));
    return at + buf.write(field, at, 'utf8');
  }
  at = writeVarInt(buf, at, field.length);
  return at + field.copy(buf, at);
}

/** Each header value as kafkajs lists them: one entry per value, an array's values in order. */
function forEachHeader(headers: IHeaders | undefined, each: (key: string, value: Field) => void): void {
  if (!headers) return;
  for (const key in headers) {
    const value = headers[key];
    if (Array.isArray(value)) for (const v of value) each(key, v as Field);
    else each(key, value as Field);
  }
}

/** Bytes of the record's key, value and headers as Kafka's record format lays them out. */
function bodySize(message: Message): number {
  let count = 0;
  let size = fieldSize(message.key as Field) + fieldSize(message.value as Field);
  forEachHeader(message.headers, (k, v) => {
    count += 1;
    size += fieldSize(k) + fieldSize(v);
  });
  return size + varIntSize(count);
}

/** Writes the record's key, value and headers at `at` (from Key on); returns where they end. */
function writeBody(buf: Buffer, at: number, message: Message): number {
  at = writeField(buf, at, message.key as Field);
  at = writeField(buf, at, message.value as Field);
  let count = 0;
  forEachHeader(message.headers, () => (count += 1));
  at = writeVarInt(buf, at, count);
  forEachHeader(message.headers, (k, v) => {
    at = writeField(buf, writeField(buf, at, k), v);
  });
  return at;
}

/** The record's key, value and headers as Kafka's record format lays them out (from Key on). */
export function encodeRecordBody(message: Message): Buffer {
  const buf = Buffer.allocUnsafe(bodySize(message));
  writeBody(buf, 0, message);
  return buf;
}

/**
 * The messages, each carrying its record encoded (again, if its fields changed since): all of them
 * in one buffer, each record a view of its part.
 */
export function withEncodedRecords<M extends Message>(messages: M[]): M[] {
  const sizes = messages.map(bodySize);
  const buf = Buffer.allocUnsafe(sizes.reduce((a, b) => a + b, 0));
  let at = 0;
  messages.forEach((message, i) => {
    const end = writeBody(buf, at, message);
    (message as Encoded)[ENCODED_BODY] = buf.subarray(at, end);
    at += sizes[i]!;
  });
  return messages;
}
