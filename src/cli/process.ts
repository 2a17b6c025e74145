import { ConfigError, loadConfig, type Config } from '../config/config.js';
import type { Logger } from '../logger.js';

/** Exit code for bad usage or configuration (README: "CLI"). */
export const EXIT_USAGE = 2;

export class UsageError extends Error {
  override name = 'UsageError';
}

let loaded: Config | undefined;

/**
 * Parses the environment once per process, or stops it with exit code 2 naming each bad
 * variable.
 */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    loaded ??= loadConfig(env);
    return loaded;
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`rentbridge: ${error.message}`);
      process.exit(EXIT_USAGE);
    }
    throw error;
  }
}

export interface Service {
  stop(): Promise<void>;
}

/**
 * Runs a long-lived role until SIGTERM or SIGINT, then stops it gracefully (the work in hand is
 * finished). A second signal, or a stop that takes longer than `graceMs`, exits at once.
 */
export async function runUntilSignal(
  logger: Logger,
  start: () => Promise<Service>,
  options: { graceMs?: number } = {},
): Promise<void> {
  const service = await start();
  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now');
        process.exit(1);
      }
      stopping = true;
      logger.info({ signal }, 'shutting down');
      const timer = setTimeout(() => {
        logger.error({ graceMs: options.graceMs ?? 30_000 }, 'graceful shutdown timed out: exiting');
        process.exit(1);
      }, options.graceMs ?? 30_000);
      timer.unref();
      service
        .stop()
        .catch((error: unknown) => logger.error({ err: error }, 'error while shutting down'))
        .finally(() => {
          clearTimeout(timer);
          resolve();
        });
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  logger.info('stopped');
}
