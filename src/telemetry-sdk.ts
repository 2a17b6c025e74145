import { markTelemetryEnabled } from './telemetry.js';

/**
 * Starts the official OpenTelemetry SDK when OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: traces over OTLP/HTTP, W3C trace context. The
 * standard OTEL_* variables apply (service name, headers...). Unset: nothing is loaded.
 * Returns a function that flushes and stops it (call it before the process exits).
 */
export async function startTelemetry(
  role: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<() => Promise<void>> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    return async () => undefined;
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME ?? 'rentbridge',
      'rentbridge.role': role,
    }),
    // Short delay: a span reaches the collector within a second or so.
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis: 500 })],
  });
  provider.register(); // global provider, W3C trace-context propagator, AsyncLocalStorage context
  markTelemetryEnabled(true);
  return async () => {
    markTelemetryEnabled(false);
    await provider.shutdown().catch(() => undefined);
  };
}
