import {
  context,
  propagation,
  trace,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { maskText } from './personal-data.js';

/**
 * OpenTelemetry hooks for the flow: a few lines in the receiver, the relay, the command consumer
 * and the Partner API transport call these. Off unless `startTelemetry` ran (it does when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, `src/telemetry-sdk.ts`): then every hook is a plain call of
 * the wrapped function, with no span and no header, after one boolean test.
 *
 * The trace context travels with the event as W3C `traceparent`: in the outbox row's headers (so a
 * relay in another process continues the trace), as the CloudEvents distributed-tracing extension
 * attribute of the published event, and as a Kafka header read by the consumer.
 */

let enabled = false;

/** A span's error text: an e-mail address in it (a registration's) is masked (decision 052). */
function spanErrorText(error: unknown): string {
  return maskText(String((error as Error | undefined)?.message ?? error));
}

/** Called by the SDK set-up once a tracer provider and the W3C propagator are registered. */
export function markTelemetryEnabled(on: boolean): void {
  enabled = on;
}

export function telemetryEnabled(): boolean {
  return enabled;
}

const tracer = () => trace.getTracer('rentbridge');

type Carrier = Record<string, string | Buffer | Array<string | Buffer> | undefined>;

const getter = {
  keys: (carrier: Carrier) => Object.keys(carrier),
  get: (carrier: Carrier, key: string) => {
    const v = carrier[key];
    const one = Array.isArray(v) ? v[0] : v;
    return one === undefined ? undefined : one.toString();
  },
};

/** The context carried by `traceparent` in these headers (Kafka or outbox), else the active one. */
export function contextFrom(headers: Carrier | undefined): Context {
  if (!headers || !('traceparent' in headers)) return context.active();
  return propagation.extract(context.active(), headers, getter);
}

/** Writes `traceparent` (and `tracestate`) of the given or active context into `headers`. */
export function injectTrace(headers: Record<string, string>, ctx: Context = context.active()): void {
  if (!enabled) return;
  propagation.inject(ctx, headers);
}

/** Runs `fn` in a span (child of `parent`, or of the active span); ends it, recording a failure. */
export async function inSpan<T>(
  name: string,
  options: { attributes?: Attributes; parent?: Context; kind?: SpanKind },
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!enabled) return fn(undefined);
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(name, { attributes: options.attributes, kind: options.kind }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: spanErrorText(error) });
    throw error;
  } finally {
    span.end();
  }
}

// ---- the hooks, one per component ---------------------------------------------------------

interface IngestItemLike {
  source: string;
  webhookId: string;
  eventType: string;
  message?: { headers?: Record<string, string> };
  change?: { headers?: Record<string, string> };
}

/**
 * Receiver: the `webhook receive` span around storing one delivery; its context goes into the
 * stored message's headers (the outbox row), so the relay and the consumers continue the trace.
 */
export function traceWebhook<T>(item: IngestItemLike, store: () => Promise<T>): Promise<T> {
  if (!enabled) return store();
  return inSpan(
    'webhook receive',
    {
      kind: SpanKind.SERVER,
      attributes: {
        'rentbridge.webhook.source': item.source,
        'rentbridge.webhook.id': item.webhookId,
        'rentbridge.webhook.type': item.eventType,
      },
    },
    async () => {
      const target = item.message ?? item.change;
      if (target) injectTrace((target.headers ??= {}));
      return store();
    },
  );
}

export interface PublishTrace {
  /** Sets the message's `traceparent` header to its row's publish span. */
  stamp<M extends { headers?: unknown }>(message: M, eventId: string): M;
  /** Ends every span once Kafka answered (with the error when it failed). */
  end(error?: unknown): void;
}

const NO_TRACE: PublishTrace = { stamp: (m) => m, end: () => undefined };

/** Relay: one `outbox publish` span per row, child of the row's stored `traceparent`. */
export function tracePublish(
  rows: Array<{ topic: string; eventId: string; headers: Record<string, string> }>,
): PublishTrace {
  if (!enabled) return NO_TRACE;
  const spans = new Map<string, Span>();
  for (const row of rows) {
    const attributes = {
      'messaging.system': 'kafka',
      'messaging.destination.name': row.topic,
      'cloudevents.event_id': row.eventId,
    };
    spans.set(
      row.eventId,
      tracer().startSpan('outbox publish', { kind: SpanKind.PRODUCER, attributes }, contextFrom(row.headers)),
    );
  }
  return {
    stamp(message, eventId) {
      const span = spans.get(eventId);
      const headers = message.headers as Record<string, string> | undefined;
      if (span && headers) injectTrace(headers, trace.setSpan(context.active(), span));
      return message;
    },
    end: (error) => endAll(spans.values(), error),
  };
}

/** Ends every span, each marked failed when there is an error. */
function endAll(spans: Iterable<Span>, error?: unknown): void {
  for (const span of spans) {
    if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: spanErrorText(error) });
    span.end();
  }
}

/**
 * Dead-letter indexer: one `dead letter index` span per letter, in the trace of the command that
 * failed (the letter keeps its command's `traceparent`). `end` once the letters are stored.
 */
export function traceIndexing(
  topic: string,
  letters: Array<{ headers?: Carrier; offset: string }>,
): { end(error?: unknown): void } {
  if (!enabled) return NO_TRACE;
  const spans = letters.map((letter) =>
    tracer().startSpan(
      'dead letter index',
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          'messaging.system': 'kafka',
          'messaging.destination.name': topic,
          'messaging.kafka.offset': letter.offset,
        },
      },
      contextFrom(letter.headers),
    ),
  );
  return { end: (error) => endAll(spans, error) };
}

/**
 * The trace context of a message published while handling `incoming` (an outcome, a follow-up
 * command): the active span's when tracing is on; else the incoming message's own `traceparent`
 * (and `tracestate`) passed on unchanged, so a back-office consuming outcomes can join the trace
 * even when this process exports no spans. Empty when neither exists.
 */
export function traceContextFor(incoming: Carrier | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (enabled) injectTrace(headers);
  if (!headers.traceparent && incoming) {
    for (const name of ['traceparent', 'tracestate']) {
      const value = getter.get(incoming, name);
      if (value !== undefined) headers[name] = value;
    }
  }
  return headers;
}

/** The CloudEvents distributed-tracing extension: `traceparent`/`tracestate` from stored headers. */
export function withTraceExtension<E extends object>(event: E, headers: Record<string, string>): E {
  if (!headers.traceparent) return event;
  return {
    ...event,
    traceparent: headers.traceparent,
    ...(headers.tracestate ? { tracestate: headers.tracestate } : {}),
  };
}

/**
 * Poller: one `poll <resource>` span per pass (a trace of its own). Its Partner API list calls are
 * its children, and the changes it records carry its context (`activeTraceHeaders`), so each
 * change's `outbox publish` and everything downstream join the pass's trace.
 */
export function tracePollPass<T extends object>(resource: string, pass: () => Promise<T>): Promise<T> {
  if (!enabled) return pass();
  return inSpan(
    `poll ${resource}`,
    { kind: SpanKind.INTERNAL, attributes: { 'rentbridge.poller.resource': resource } },
    async (span) => {
      const stats = await pass();
      for (const [key, value] of Object.entries(stats)) {
        if (typeof value === 'number') span?.setAttribute(`rentbridge.poller.${key}`, value);
      }
      return stats;
    },
  );
}

/** The active span's context as message headers (`traceparent`); undefined when tracing is off. */
export function activeTraceHeaders(): Record<string, string> | undefined {
  if (!enabled) return undefined;
  const headers: Record<string, string> = {};
  injectTrace(headers);
  return Object.keys(headers).length > 0 ? headers : undefined;
}

/** Command consumer: the `command` span around one message, child of its Kafka `traceparent`. */
export function traceCommand<T>(
  consumer: string,
  message: { headers?: Carrier; offset: string },
  handle: () => Promise<T>,
): Promise<T> {
  if (!enabled) return handle();
  return inSpan(
    `command ${consumer}`,
    {
      kind: SpanKind.CONSUMER,
      parent: contextFrom(message.headers),
      attributes: {
        'messaging.system': 'kafka',
        'rentbridge.consumer': consumer,
        'messaging.kafka.offset': message.offset,
      },
    },
    () => handle(),
  );
}

/** Partner API transport: one `partner` span per HTTP call, with its X-Request-Id. */
export function tracePartnerCall<T>(endpoint: string, requestId: string, call: () => Promise<T>): Promise<T> {
  if (!enabled) return call();
  return inSpan(
    `partner ${endpoint}`,
    {
      kind: SpanKind.CLIENT,
      attributes: { 'http.request.header.x-request-id': requestId, 'rentbridge.partner.endpoint': endpoint },
    },
    async (span) => {
      const result = await call();
      const status = (result as { status?: unknown }).status;
      if (span && typeof status === 'number') span.setAttribute('http.response.status_code', status);
      return result;
    },
  );
}

/**
 * Command consumer: the `outcome publish` span (inside the command span), naming the command by
 * its identity (source + type + id: two commands may share an id).
 */
export function traceOutcome<T>(
  command: { source: string; commandType: string; commandId: string },
  state: string,
  publish: () => Promise<T>,
): Promise<T> {
  if (!enabled) return publish();
  return inSpan(
    'outcome publish',
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        'rentbridge.command.source': command.source,
        'rentbridge.command.type': command.commandType,
        'rentbridge.command.id': command.commandId,
        'rentbridge.command.state': state,
      },
    },
    () => publish(),
  );
}
