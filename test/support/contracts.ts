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
  /** Channel address (logical topic) → the CloudEvent types its messages may carry, from docs/asyncapi.yaml. */
  channels: Map<string, { types: Set<string>; schemas: Map<string, string> }>;
  /** Headers every message carries (the cloudEvent trait's header properties). */
  traitHeaders: string[];
}

export async function loadContracts(): Promise<Contracts> {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
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
  const channels: Contracts['channels'] = new Map();
  for (const channel of document.channels().all()) {
    const types = new Set<string>();
    const schemas = new Map<string, string>();
    for (const message of channel.messages().all()) {
      const name = message.name();
      if (!name) continue;
      types.add(name);
      schemas.set(name, schemaFileOf(message.json()));
    }
    channels.set(channel.address() ?? channel.id(), { types, schemas });
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
  };
}

/** The docs/schemas file a message's `data` references (allOf[1].properties.data.$ref of its payload). */
function schemaFileOf(json: unknown): string {
  const text = JSON.stringify(json);
  const refs = [...text.matchAll(/"\$ref":"\.\/schemas\/([\w-]+\.json)"/g)].map((m) => m[1]!);
  // The payload references cloudevent.json and its data's schema; after the parser resolves the
  // refs, the title or $id says which it was.
  const ids = [...text.matchAll(/"\$id":"https:\/\/rentbridge\.local\/schemas\/([\w-]+\.json)"/g)].map(
    (m) => m[1]!,
  );
  return [...refs, ...ids].find((f) => f !== 'cloudevent.json') ?? '';
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
