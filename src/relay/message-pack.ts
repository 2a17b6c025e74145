import type { Message } from 'kafkajs';

/**
 * One request's messages as one buffer, to cross to the relay's send worker (transferred, not
 * copied): per message its key, value (or null) and headers, each length-prefixed. Decoded by the
 * worker (src/relay/send-worker-source.ts, `unpack`) into kafkajs messages with the same bytes.
 *
 *   u32 key length (0xffffffff: null), key utf-8
 *   u32 value length (0xffffffff: null), value bytes
 *   u16 header count, each: u16 name length, name utf-8, u32 value length, value bytes
 */
const NULL = 0xffffffff;

type Bytes = string | Buffer | null | undefined;

function size(v: Bytes): number {
  return v == null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length;
}

function headerEntries(message: Message): Array<[string, Bytes]> {
  const entries: Array<[string, Bytes]> = [];
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    if (Array.isArray(value)) for (const v of value) entries.push([name, v as Bytes]);
    else entries.push([name, value as Bytes]);
  }
  return entries;
}

export function packMessages(messages: Message[]): ArrayBuffer {
  const headers = messages.map(headerEntries);
  let total = 0;
  messages.forEach((m, i) => {
    total += 10 + size(m.key as Bytes) + size(m.value as Bytes);
    for (const [name, value] of headers[i]!) total += 6 + Buffer.byteLength(name) + size(value);
  });
  const arrayBuffer = new ArrayBuffer(total);
  const buf = Buffer.from(arrayBuffer);
  let at = 0;
  const bytes = (v: Bytes, wide: boolean) => {
    if (v == null) {
      at = buf.writeUInt32BE(NULL, at);
      return;
    }
    const n = size(v);
    at = wide ? buf.writeUInt32BE(n, at) : buf.writeUInt16BE(n, at);
    if (typeof v === 'string') buf.write(v, at, n, 'utf8');
    else v.copy(buf, at);
    at += n;
  };
  messages.forEach((m, i) => {
    bytes(m.key as Bytes, true);
    bytes(m.value as Bytes, true);
    at = buf.writeUInt16BE(headers[i]!.length, at);
    for (const [name, value] of headers[i]!) {
      bytes(name, false);
      bytes(value ?? '', true);
    }
  });
  return arrayBuffer;
}
