import { migrate } from '../../db/migrate.js';
import { createLogger } from '../../logger.js';
import { resolveLogFormat } from '../../log-format.js';
import { loadConfigOrExit } from '../process.js';

export async function migrateCommand(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.LOG_LEVEL, format: resolveLogFormat(config.LOG_FORMAT) });
  const result = await migrate(config.DATABASE_URL, { logger });
  logger.info(result, result.applied.length ? 'database migrated' : 'database already up to date');
}
