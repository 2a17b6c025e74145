import { ConfigError, loadConfig, type Config } from '../config/config.js';

/** Exit code for bad usage or configuration (docs/cli.md). */
export const EXIT_USAGE = 2;

export { UsageError } from '../errors.js';

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
