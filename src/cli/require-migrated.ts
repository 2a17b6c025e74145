import { pendingMigrations } from '../db/migrate.js';
import type { Logger } from '../logger.js';
import { UsageError } from '../errors.js';

/**
 * Every role checks at start that the database schema is current, as /readyz does: a role
 * started on an unmigrated database would otherwise fail each unit of work (`42P01`) and retry
 * forever. Pending migrations stop the process with exit 2 naming `rentbridge migrate`. A check
 * that cannot run (PostgreSQL not answering yet) is not a verdict: the role starts and rides
 * the outage out, and /readyz keeps telling the truth.
 */
export async function requireMigrated(databaseUrl: string, logger: Logger): Promise<void> {
  let pending: string[];
  try {
    pending = await pendingMigrations(databaseUrl);
  } catch (error) {
    logger.warn({ err: error }, 'could not check the database schema at start; continuing');
    return;
  }
  if (pending.length > 0) {
    throw new UsageError(
      `the database schema is not current: ${pending.length} migration(s) pending (${pending.join(', ')}); run \`rentbridge migrate\` first`,
    );
  }
}
