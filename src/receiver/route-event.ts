import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import {
  commandIdOf,
  contractOfPmsEvent,
  pmsEventSchemaOf,
  targetIdOf,
} from '../contracts/command-contracts.js';
import { parsePartnerEventType, partnerWebhookSchema } from '../contracts/partner-events.js';
import { webhookEnvelopeSchema } from '../contracts/pms-events.js';
import { UNROUTED_TYPE, type UnroutedEvent } from '../contracts/unrouted.js';
import { AppError } from '../errors.js';
import { TOPICS } from '../kafka/topics.js';
import type { IngestItem } from './ingest-writer.js';

/**
 * Turns a verified webhook body into what the ingest writer stores: a command, a state change,
 * or an unrouted event. Pure: throws a 422 AppError listing every failing field.
 */

export interface Delivery {
  /** `partner` or `pms:<source>`. */
  source: string;
  /** CloudEvent source: `/webhooks/partner`, `/webhooks/pms/<source>`. */
  path: string;
  webhookId: string;
  requestId: string;
  body: unknown;
}

export function validationError(error: z.ZodError): AppError {
  const errors = error.issues.map((i) => {
    const path = i.path.map(String).join('.') || '(body)';
    return `${path}: ${i.message.replace(/^Invalid input: /, '')}`;
  });
  return new AppError(422, 'validation_error', 'the webhook body does not match the schema of its type', {
    extra: { errors },
  });
}

// NUL, or half of a surrogate pair: valid in JSON, refused by PostgreSQL's jsonb.
// eslint-disable-next-line no-control-regex -- NUL is exactly what must be found
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Deeper bodies are refused: PostgreSQL's jsonb and our own walks have a stack. */
export const MAX_DEPTH = 64;

/**
 * What PostgreSQL cannot store, by path: keys or strings with NUL or lone surrogates, and nesting
 * deeper than MAX_DEPTH. Checked before writing, so it is a 422, not a 500. Iterative: a
 * hostile body must not overflow our stack either.
 */
export function unstorableText(body: unknown): string[] {
  const problems: string[] = [];
  const stack: Array<{ value: unknown; path: string[] }> = [{ value: body, path: [] }];
  while (stack.length > 0 && problems.length < 20) {
    const { value, path } = stack.pop()!;
    const where = path.join('.') || '(body)';
    if (typeof value === 'string') {
      if (UNSTORABLE.test(value)) problems.push(`${where}: NUL or unpaired surrogate`);
    } else if (value !== null && typeof value === 'object') {
      if (path.length >= MAX_DEPTH) {
        problems.push(`${where}: nested deeper than ${MAX_DEPTH} levels`);
        continue;
      }
      for (const [k, v] of Object.entries(value)) {
        if (UNSTORABLE.test(k))
          problems.push(`${[...path, k].join('.')}: NUL or unpaired surrogate in a key`);
        else stack.push({ value: v, path: [...path, k] });
      }
    }
  }
  return problems;
}

function parse<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body);
  if (!result.success) throw validationError(result.error);
  return result.data;
}

function headersOf(d: Delivery): Record<string, string> {
  return { 'webhook-id': d.webhookId, 'request-id': d.requestId };
}

function unrouted(d: Delivery, type: string): IngestItem {
  const data: UnroutedEvent = {
    source: d.source,
    webhook_id: d.webhookId,
    received_type: type,
    payload: d.body,
  };
  return {
    kind: 'message',
    source: d.source,
    webhookId: d.webhookId,
    eventType: type,
    message: {
      eventId: randomUUID(),
      topic: TOPICS.unrouted,
      key: d.webhookId,
      type: UNROUTED_TYPE,
      source: d.path,
      subject: d.webhookId,
      data: data as never,
      headers: headersOf(d),
    },
  };
}

/**
 * A PMS webhook: the command its type carries (its entry in the list of command types), on the entry's
 * topic, keyed by its target; an unknown type goes to inbound.unrouted.
 */
export function routePmsEvent(d: Delivery): IngestItem {
  const { type } = parse(webhookEnvelopeSchema, d.body);
  const commandType = contractOfPmsEvent(type);
  if (!commandType) return unrouted(d, type);
  const { data } = parse(pmsEventSchemaOf(commandType), d.body);
  return {
    kind: 'message',
    source: d.source,
    webhookId: d.webhookId,
    eventType: type,
    message: {
      eventId: randomUUID(),
      topic: commandType.topic,
      key: targetIdOf(commandType, data),
      type: commandType.eventType,
      source: d.path,
      subject: commandIdOf(commandType, data),
      data: data as never,
      headers: headersOf(d),
    },
  };
}

export function routePartnerEvent(d: Delivery): IngestItem {
  const { type } = parse(webhookEnvelopeSchema, d.body);
  const kind = parsePartnerEventType(type);
  if (!kind) return unrouted(d, type);
  const { data } = parse(partnerWebhookSchema, d.body);
  return {
    kind: 'state-change',
    source: d.source,
    webhookId: d.webhookId,
    eventType: type,
    change: {
      resource: kind.resource,
      record: data,
      removed: kind.removed,
      source: d.path,
      headers: headersOf(d),
    },
  };
}
