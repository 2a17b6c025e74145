import type { Db } from '../db/prisma.js';
import { escapeId } from '../contracts/command-contracts.js';
import type { Trace, TraceStep } from '../event-trace/trace.js';
import { attemptsOf, listDeliveries } from './callback-repository.js';

/** A trace with its commands' outcome callbacks (stage `callback`). */
export type TraceWithCallbacks = Omit<Trace, 'steps'> & {
  steps: Array<Omit<TraceStep, 'stage'> & { stage: TraceStep['stage'] | 'callback' }>;
};

/**
 * Adds to a trace (`rentbridge trace`, the console) the outcome callbacks of the commands it
 * shows: each delivery's attempts as steps, and a dead or waiting one where the trail ends.
 */
export async function withCallbackSteps(db: Db, trace: Trace): Promise<TraceWithCallbacks> {
  const commands = trace.steps.filter((s) => s.stage === 'command');
  if (commands.length === 0) return trace;
  const steps: TraceWithCallbacks['steps'] = [...trace.steps];
  const ends = [...trace.ends];
  for (const c of commands) {
    const { source, commandId, commandType } = c.details;
    if (typeof source !== 'string' || typeof commandId !== 'string' || typeof commandType !== 'string')
      continue;
    const deliveries = await listDeliveries(db, { source, commandId, commandType });
    for (const d of deliveries.reverse()) {
      const details = {
        deliveryId: d.id,
        webhookId: d.webhookId,
        source: d.source,
        outcome: d.outcomeStatus,
      };
      steps.push({
        at: d.createdAt.toISOString(),
        stage: 'callback',
        what: `outcome ${d.outcomeStatus} queued for the callback to ${escapeId(d.source)}`,
        details,
      });
      for (const [i, a] of (await attemptsOf(db, d.id)).entries()) {
        steps.push({
          at: a.at.toISOString(),
          stage: 'callback',
          what: `callback #${i + 1} to ${escapeId(d.source)} → ${a.result}${a.httpStatus ? ` ${a.httpStatus}` : ''} in ${a.durationMs} ms`,
          details: { ...details, error: a.error },
        });
      }
      if (d.state === 'dead') {
        ends.push(
          `the callback of outcome ${d.outcomeStatus} to ${escapeId(d.source)} ran out of retries (dead letter): rentbridge callbacks redeliver ${d.id}`,
        );
      } else if (d.state === 'pending') {
        ends.push(
          `the callback of outcome ${d.outcomeStatus} to ${escapeId(d.source)} is pending (${d.attempts} attempts, next ${d.nextAttemptAt.toISOString()})`,
        );
      }
    }
  }
  steps.sort((a, b) => a.at.localeCompare(b.at));
  return { ...trace, steps, ends };
}
