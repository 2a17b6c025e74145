import pino from 'pino';
import type { Config } from '../config/config.js';
import { prettyDestination, resolveLogFormat } from '../log-format.js';
import { createLogger, type Logger } from '../logger.js';

/**
 * The log of a one-off command (`reconcile`, `resync`, `probe`): on stderr, so that what the
 * command answers on stdout (a table, `--format json`) stays clean for a pipe; readable lines when
 * stderr is a terminal, JSON otherwise (or as LOG_FORMAT says); `warn` and above unless LOG_LEVEL
 * is set, so a person at a terminal reads the answer, not the start-up of the clients behind it.
 */
export function toolLogger(config: Config, env: NodeJS.ProcessEnv = process.env): Logger {
  const format = resolveLogFormat(config.LOG_FORMAT, process.stderr.isTTY === true);
  const level = env.LOG_LEVEL ? config.LOG_LEVEL : 'warn';
  return createLogger(
    { level, format },
    format === 'pretty' ? prettyDestination(process.stderr) : pino.destination({ fd: 2, sync: true }),
  );
}
