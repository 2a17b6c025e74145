import type { Db } from '../db/prisma.js';
import { escapeId } from '../events/command-identity.js';
import { buildTimeline, COMMAND_TOPIC_NAMES, named } from './timeline.js';
import type { Trace, TraceOptions } from './trace-types.js';
import { identityKey, readTraceRows, type TraceScope } from './trace-repository.js';

export { ID_KINDS, type IdKind } from './trace-repository.js';
export { ID_KIND_NAMES } from './timeline.js';
export type { Trace, TraceCandidate, TraceOptions, TraceStage, TraceStep } from './trace-types.js';

/**
 * `rentbridge trace <id>` and the console's trace view: the life of one event as a timeline, from
 * what PostgreSQL holds, and where that trail ends (src/trace/timeline.ts). Any id works: webhook
 * id, CloudEvent id, command id (the field each command type declares, src/commands/command-types.ts),
 * Partner request id (`<commandId>.a<n>`), record id, dead-letter id.
 */

export async function traceId(db: Db, id: string, options: TraceOptions): Promise<Trace> {
  const trimmed = id.trim();
  const scope: TraceScope = {
    ...(options.source !== undefined && { source: options.source }),
    ...(options.commandType !== undefined && { commandType: options.commandType }),
  };
  // The outbox keeps logical topic names; the relay adds KAFKA_TOPIC_PREFIX when it publishes.
  const rows = await readTraceRows(db, trimmed, [...COMMAND_TOPIC_NAMES], scope, options.as);
  // A command's own id names it alone only when one command has it: else list them.
  const own = new Map(rows.commands.filter((c) => c.commandId === trimmed).map((c) => [identityKey(c), c]));
  if (own.size > 1) {
    const candidates = [...own.values()].map((c) => ({
      source: c.source,
      commandType: c.commandType,
      commandId: c.commandId,
      targetId: c.targetId,
      state: c.state,
      requestIdBase: c.requestIdBase,
    }));
    return {
      id: trimmed,
      matchedAs: rows.matchedAs,
      as: options.as ?? null,
      found: true,
      candidates,
      steps: [],
      ends: [
        `"${escapeId(trimmed)}" is the id of ${candidates.length} commands (two commands that share an id are two commands); trace one with --source and/or --type, or by its request id:`,
        ...candidates.map(
          (c) =>
            `${named(c)} → ${escapeId(c.targetId)}, ${c.state}: rentbridge trace ${c.requestIdBase}.a1, or --source ${JSON.stringify(c.source)} --type ${c.commandType}`,
        ),
      ],
    };
  }
  return buildTimeline(trimmed, rows, options);
}
