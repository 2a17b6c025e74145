import { createCompositionRoot } from '../../app/composition-root.js';
import { withCallbackSteps } from '../../callbacks/callback-trace.js';
import { formatTrace } from '../../event-trace/trace-table.js';
import { traceId, type IdKind } from '../../event-trace/trace.js';
import { maskPersonal } from '../../personal-data.js';
import { auditCliReveal, requireRevealForSearch, revealReason } from '../cli-reveal.js';
import { loadConfigOrExit } from '../process.js';

/**
 * `rentbridge trace <id> [--source S] [--type T] [--as <kind>] [--json] [--reveal REASON]`: the
 * life of one event from what PostgreSQL holds, personal values masked unless revealed (decision
 * 052; tracing by an e-mail or a phone is a reveal). Exit 0 when something was found, 1 when
 * nothing was. An id that is the own id of several commands (other sources or types) lists them;
 * --source / --type pick one.
 */
export async function trace(
  id: string,
  opts: { json?: boolean; source?: string; type?: string; as?: IdKind; reveal?: string },
): Promise<void> {
  const reason = revealReason(opts.reveal);
  requireRevealForSearch([id], reason);
  const runtime = createCompositionRoot(loadConfigOrExit());
  try {
    if (reason) await auditCliReveal(runtime.db, 'trace', id, reason);
    const traced = await traceId(runtime.db, id, {
      topicPrefix: runtime.config.KAFKA_TOPIC_PREFIX,
      retentionHours: runtime.config.OUTBOX_RETENTION_HOURS,
      ...(opts.source !== undefined && { source: opts.source }),
      ...(opts.type !== undefined && { commandType: opts.type }),
      ...(opts.as && { as: opts.as }),
    });
    // The outcome callbacks of the commands it shows (src/callbacks/).
    const whole = await withCallbackSteps(runtime.db, traced);
    const result = reason ? whole : maskPersonal(whole);
    process.stdout.write(`${opts.json ? JSON.stringify(result, null, 2) : formatTrace(result)}\n`);
    process.exitCode = result.found ? 0 : 1;
  } finally {
    await runtime.close();
  }
}
