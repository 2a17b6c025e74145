import { createLogger } from '../../logger.js';
import { resolveLogFormat } from '../../log-format.js';
import { runUntilSignal } from '../../app/lifecycle.js';
import { UsageError } from '../process.js';

/**
 * `rentbridge sandbox [--port N] [--seed demo]`: the Partner API sandbox on its own. It needs
 * no database, Kafka or configuration, so it reads no environment beyond LOG_LEVEL.
 */
export async function sandbox(opts: { port: number; seed?: string; host?: string }): Promise<void> {
  if (opts.seed !== undefined && opts.seed !== 'demo')
    throw new UsageError(`unknown seed "${opts.seed}": the only data set is "demo"`);
  const logger = createLogger({
    level: process.env.LOG_LEVEL ?? 'info',
    name: 'rentbridge-sandbox',
    format: resolveLogFormat(
      process.env.LOG_FORMAT === 'json' || process.env.LOG_FORMAT === 'pretty'
        ? process.env.LOG_FORMAT
        : undefined,
    ),
  });
  const { startSandbox, DEFAULT_ACCESS_KEY, DEFAULT_SECRET_KEY } = await import('../../dev/sandbox/index.js');
  await runUntilSignal(logger, async () => {
    const sandbox = await startSandbox({
      port: opts.port,
      ...(opts.host && { host: opts.host }),
      seed: opts.seed === 'demo' ? 'demo' : undefined,
      logger,
    });
    // The default key pair is public (DESIGN.md), so it is printed in the message where the
    // logger's redaction of secret fields does not hide it.
    logger.info(
      { url: sandbox.url, seed: opts.seed ?? null },
      `sandbox listening on ${sandbox.url} (keys: ${DEFAULT_ACCESS_KEY} / ${DEFAULT_SECRET_KEY}; control API: ${sandbox.url}/__sandbox)`,
    );
    return { stop: () => sandbox.close() };
  });
}
