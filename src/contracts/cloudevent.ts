import { z } from 'zod';

/**
 * CloudEvents 1.0, JSON structured mode: every Kafka message value rentbridge writes is one.
 * https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/formats/json-format.md
 */
export const cloudEventSchema = z.looseObject({
  specversion: z.literal('1.0'),
  id: z.string().min(1),
  source: z.string().min(1),
  type: z.string().min(1),
  subject: z.string().optional(),
  time: z.string().optional(),
  datacontenttype: z.string().optional(),
  data: z.unknown(),
});
export type CloudEvent<T = unknown> = z.infer<typeof cloudEventSchema> & { data: T };

/** Content type of a structured-mode message (also set as the Kafka `content-type` header). */
export const CLOUDEVENT_CONTENT_TYPE = 'application/cloudevents+json; charset=UTF-8';

export function toCloudEvent<T>(e: {
  id: string;
  source: string;
  type: string;
  subject?: string | null;
  time?: Date;
  data: T;
}): CloudEvent<T> {
  return {
    specversion: '1.0',
    id: e.id,
    source: e.source,
    type: e.type,
    ...(e.subject ? { subject: e.subject } : {}),
    time: (e.time ?? new Date()).toISOString(),
    datacontenttype: 'application/json',
    data: e.data,
  };
}

/** Parses a Kafka message value as a CloudEvent; throws a ZodError or SyntaxError when it is not one. */
export function parseCloudEvent(value: Buffer | string | null): CloudEvent {
  if (value == null) throw new SyntaxError('message has no value');
  return cloudEventSchema.parse(JSON.parse(value.toString())) as CloudEvent;
}

/**
 * The Kafka headers of a structured-mode CloudEvent (the CloudEvents Kafka protocol binding, and
 * docs/asyncapi.yaml): `content-type`, plus `ce_id` and `ce_type` copied from the event so a
 * consumer can route or dedupe without parsing the value.
 */
export function cloudEventHeaders(event: { id: string; type: string }): Record<string, string> {
  return { 'content-type': CLOUDEVENT_CONTENT_TYPE, ce_id: event.id, ce_type: event.type };
}
