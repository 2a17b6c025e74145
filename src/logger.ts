import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/**
 * Paths redacted from every log line. pino's wildcards reach one level, so the common places a
 * secret travels are listed: HTTP headers, request bodies, config objects.
 */
export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  '*.*.authorization',
  '*["x-access-token"]',
  '*.*["x-access-token"]',
  'secret_key',
  '*.secret_key',
  '*.*.secret_key',
  'secretKey',
  '*.secretKey',
  'token',
  '*.token',
  '*.*.token',
  'accessToken',
  '*.accessToken',
  'secret',
  '*.secret',
  'secrets',
  '*.secrets',
  '*.webhook_secret',
  '*.webhookSecret',
  '*["webhook-signature"]',
  '*.*["webhook-signature"]',
  '*.PARTNER_SECRET_KEY',
  '*.PARTNER_WEBHOOK_SECRETS',
  '*.PMS_WEBHOOK_SECRETS',
  '*.OPS_TOKEN',
  '*.DATABASE_URL',
];

/** The one root logger; every component logs through a child carrying its ids. */
export function createLogger(
  options: { level?: string; name?: string } = {},
  destination?: pino.DestinationStream,
): Logger {
  const opts: LoggerOptions = {
    name: options.name ?? 'rentbridge',
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
  };
  return destination ? pino(opts, destination) : pino(opts);
}
