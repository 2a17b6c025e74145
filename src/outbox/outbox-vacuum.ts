import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';

/**
 * After a large drain the partial index of unpublished rows (decision 001) holds an entry for
 * every row just published until VACUUM removes them, and every read from the start of a topic
 * walks them: after a drain of 1,000,000 rows the next backlog drained at about 150 rows/s
 * instead of 2,800 until a VACUUM (autovacuum had not come by). So the relay vacuums the outbox
 * itself each time it has published `afterRows` rows since its last vacuum, during a long drain
 * too (its reads from the start of a topic walk the same entries). A plain VACUUM blocks neither
 * inserts nor marks, and it runs beside the relay's loop, never in its way; a failure (a role
 * without the right to vacuum, say) is logged and left to autovacuum.
 */
export function createOutboxVacuum(options: { db: Db; logger: Logger; afterRows: number }) {
  let published = 0;
  let running: Promise<void> | null = null;
  return {
    /** Rows marked published. */
    count(rows: number): void {
      published += rows;
    },
    /** Starts a vacuum in the background when enough rows were published since the last one. */
    maybeRun(): void {
      if (running || published < options.afterRows) return;
      const since = published;
      published = 0;
      const started = Date.now();
      running = options.db
        .$executeRawUnsafe('VACUUM (ANALYZE) outbox')
        .then(
          () =>
            options.logger.info(
              { publishedSince: since, ms: Date.now() - started },
              'outbox vacuumed after a drain',
            ),
          (error: unknown) =>
            options.logger.warn({ err: error }, 'outbox not vacuumed after a drain: autovacuum will'),
        )
        .finally(() => {
          running = null;
        });
    },
    /** Resolves once a vacuum under way ended (on stop). */
    async settled(): Promise<void> {
      await running;
    },
  };
}
