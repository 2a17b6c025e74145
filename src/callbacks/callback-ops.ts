import type { Db } from '../db/prisma.js';
import { writeAudit } from '../dead-letters/audit-repository.js';
import { escapeId } from '../contracts/command-contracts.js';
import { maskText } from '../personal-data.js';
import { terminalSafe } from '../terminal-text.js';
import { redeliver, type Delivery } from './callback-repository.js';

/**
 * What ops do with callback dead letters, from the CLI (`rentbridge callbacks`) and the console:
 * redeliver one or many (audited as dead-letter redrives are), and read them.
 */

export interface RedeliverRequest {
  /** These deliveries (dead ones; others are left as they are). */
  ids?: readonly string[];
  /** Every dead delivery of this source (with `all`), or only among `ids`. */
  source?: string;
  /** Every dead delivery (of `source` when given). Required when no ids are given. */
  all?: boolean;
  actor: string;
  reason?: string;
}

/** Redelivers dead callbacks: pending again, due now, with a fresh retry span; audited. */
export async function redeliverCallbacks(db: Db, request: RedeliverRequest): Promise<string[]> {
  if (!request.all && !request.ids?.length)
    throw new Error('name the deliveries to redeliver, or ask for all');
  for (const id of request.ids ?? []) {
    if (!/^[1-9][0-9]{0,18}$/.test(id)) throw new Error(`"${id}" is not a delivery id`);
  }
  const ids = await redeliver(db, {
    ...(request.ids?.length && { ids: request.ids }),
    ...(request.source !== undefined && { source: request.source }),
  });
  if (ids.length > 0) {
    await writeAudit(db, {
      actor: request.actor,
      action: 'callback_redeliver',
      target: ids.length === 1 ? `callback_delivery:${ids[0]}` : `callback_deliveries:${ids.length}`,
      reason: request.reason ?? null,
      details: { ids, ...(request.source !== undefined && { source: request.source }) },
    });
  }
  return ids;
}

/** A table cell: an endpoint's answer (`last_error`) is outside text, escaped and masked. */
function cell(text: string | number | null | undefined, width: number): string {
  const s = text == null || text === '' ? '-' : terminalSafe(maskText(String(text)));
  return s.length > width ? `${s.slice(0, width - 1)}…` : s.padEnd(width);
}

/** Deliveries as a table: ids escaped (a PMS's ids are its own text). */
export function formatDeliveries(deliveries: readonly Delivery[]): string {
  const header = `${cell('ID', 8)} ${cell('STATE', 10)} ${cell('SOURCE', 12)} ${cell('COMMAND', 28)} ${cell('OUTCOME', 16)} ${cell('ATTEMPTS', 8)} ${cell('LAST', 28)} CREATED`;
  const rows = deliveries.map(
    (d) =>
      `${cell(d.id, 8)} ${cell(d.state, 10)} ${cell(escapeId(d.source), 12)} ${cell(
        `${d.commandType} ${escapeId(d.commandId)}`,
        28,
      )} ${cell(d.outcomeStatus, 16)} ${cell(d.attempts, 8)} ${cell(d.lastError, 28)} ${d.createdAt.toISOString()}`,
  );
  return [header, ...rows].join('\n');
}
