import { createCompositionRoot } from '../../app/composition-root.js';
import { withCallbackSteps } from '../../callbacks/callback-trace.js';
import { formatTrace } from '../../event-trace/trace-table.js';
import { traceId, type IdKind } from '../../event-trace/trace.js';
import { loadConfigOrExit } from '../process.js';

/**
/**
 * `rentbridge trace <id> [--source S] [--type T] [--as <kind>] [--json]`: the life of one event
 * from what PostgreSQL holds. Exit 0 when something was found, 1 when nothing was. An id that is
 * the own id of several commands (other sources or types) lists them; --source / --type pick one.
 */
export async function trace(
  id: string,
  opts: { json?: boolean; source?: string; type?: string; as?: IdKind },
): Promise<void> {
  const runtime = createCompositionRoot(loadConfigOrExit());
  try {
    const traced = await traceId(runtime.db, id, {
      topicPrefix: runtime.config.KAFKA_TOPIC_PREFIX,
      retentionHours: runtime.config.OUTBOX_RETENTION_HOURS,
      ...(opts.source !== undefined && { source: opts.source }),
      ...(opts.type !== undefined && { commandType: opts.type }),
      ...(opts.as && { as: opts.as }),
    });
    // The outcome callbacks of the commands it shows (src/callbacks/).
    const result = await withCallbackSteps(runtime.db, traced);
    process.stdout.write(`${opts.json ? JSON.stringify(result, null, 2) : formatTrace(result)}\n`);
    process.exitCode = result.found ? 0 : 1;
  } finally {
    await runtime.close();
  }
}
