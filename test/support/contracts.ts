import { readFile, readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Parser, fromFile } from '@asyncapi/parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { Kafka as CloudEventsKafka, type CloudEvent, type KafkaMessage as CeKafkaMessage } from 'cloudevents';
import type { IHeaders, KafkaMessage } from 'kafkajs';

/**
 * The contracts as an outside client holds rentbridge to them, with libraries nobody here wrote:
 * the CloudEvents SDK (Kafka binding, structured mode), ajv with the published JSON Schemas of
 * docs/schemas, and @asyncapi/parser reading docs/asyncapi.yaml.
 */

const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));
// ajv-formats is CommonJS with a default export.
const addFormats: FormatsPlugin =
  (addFormatsModule as unknown as { default?: FormatsPlugin }).default ??
  (addFormatsModule as unknown as FormatsPlugin);

export interface Contracts {
  /** The validator of docs/schemas/<name>.json. */
  schema(name: string): ValidateFunction;
  /**
   * Channel address (logical topic) → its messages by CloudEvent type (the message's `name`), each
   * with the validator of its payload as docs/asyncapi.yaml resolves it (CloudEvent + data schema).
   */
  channels: Map<string, Map<string, ValidateFunction>>;
  /** Headers every message carries (the cloudEvent trait's header properties). */
  traitHeaders: string[];
  /** Every example of every message: channel, CloudEvent type, example name and payload. */
  examples: Array<{ channel: string; type: string; name: string; payload: unknown }>;
}

function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  return ajv;
}

/** Drops `$id`s the parser left in the resolved payloads: the same file appears in many of them. */
function withoutIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutIds);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => k !== '$id' && !k.startsWith('x-parser-'))
        .map(([k, v]) => [k, withoutIds(v)]),
    );
  }
  return value;
}

export async function loadContracts(): Promise<Contracts> {
  const ajv = newAjv();
  const dir = `${DOCS}schemas/`;
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.json'))) {
    ajv.addSchema(JSON.parse(await readFile(dir + file, 'utf8')) as object, file);
  }

  const parser = new Parser();
  const { document, diagnostics } = await fromFile(parser, `${DOCS}asyncapi.yaml`).parse();
  const errors = diagnostics.filter((d) => d.severity === 0);
  if (!document || errors.length > 0) {
    throw new Error(`docs/asyncapi.yaml does not parse: ${errors.map((e) => e.message).join('; ')}`);
  }
  const payloads = newAjv();
  const channels: Contracts['channels'] = new Map();
  const examples: Contracts['examples'] = [];
  for (const channel of document.channels().all()) {
    const messages = new Map<string, ValidateFunction>();
    for (const message of channel.messages().all()) {
      const name = message.name();
      const payload = message.payload()?.json();
      if (name && payload) messages.set(name, payloads.compile(withoutIds(payload) as object));
      for (const example of message.examples().all()) {
        examples.push({
          channel: channel.address() ?? channel.id(),
          type: name ?? '',
          name: example.name() ?? '',
          payload: example.payload(),
        });
      }
    }
    channels.set(channel.address() ?? channel.id(), messages);
  }
  const raw = document.json() as {
    components?: { messageTraits?: { cloudEvent?: { headers?: { properties?: object } } } };
  };
  const traitHeaders = Object.keys(raw.components?.messageTraits?.cloudEvent?.headers?.properties ?? {});
  return {
    schema(name) {
      const v = ajv.getSchema(name.endsWith('.json') ? name : `${name}.json`);
      if (!v) throw new Error(`no schema ${name} in docs/schemas`);
      return v;
    },
    channels,
    traitHeaders,
    examples,
  };
}

export function headerMap(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    const one = Array.isArray(v) ? v[0] : v;
    if (one !== undefined) out[k] = one.toString();
  }
  return out;
}

/**
 * Reads a Kafka message with the CloudEvents SDK's Kafka binding (structured mode) and returns
 * the event; throws what the SDK throws when the message is not a CloudEvent by the binding.
 */
export function cloudEventOf(message: KafkaMessage): { id: string; type: string; data: unknown } {
  const ceMessage: CeKafkaMessage = {
    key: message.key?.toString() ?? '',
    value: message.value?.toString() ?? '',
    headers: headerMap(message.headers),
    body: message.value?.toString() ?? '',
    timestamp: message.timestamp,
  };
  if (!CloudEventsKafka.isEvent(ceMessage)) throw new Error('the CloudEvents SDK does not see an event');
  const event = CloudEventsKafka.toEvent(ceMessage);
  const one = (Array.isArray(event) ? event[0] : event) as CloudEvent;
  one.validate();
  return { id: one.id, type: one.type, data: one.data };
}

export function ajvErrors(v: ValidateFunction): string {
  return (v.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`).join('; ');
}
