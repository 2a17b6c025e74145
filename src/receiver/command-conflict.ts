import type pg from 'pg';
import { commandContracts, commandSourceOf } from '../contracts/command-contracts.js';
import { sameContent } from '../guard/machine/command-record.js';
import type { IngestItem } from './ingest-items.js';

/**
 * A command id seen before with other content (issue 54): when the earlier command is already in
 * PostgreSQL (its guard row, written once a consumer took it), the receiver knows at once and
 * answers 409 `conflicting_duplicate`, instead of a 202 for a command that can only become a dead
 * letter. When the earlier one is not there yet (still in the outbox or on Kafka, moments apart),
 * the receiver cannot know: the consumer refuses the second as before (dead letter
 * `conflicting_duplicate`, outcome `rejected`). Read from the guard's rows by their primary key.
 */
export interface EarlierCommand {
  source: string;
  commandType: string;
  commandId: string;
  /** The earlier command's state (`applied`, `pending`…). */
  state: string;
}

export async function conflictingCommand(pool: pg.Pool, item: IngestItem): Promise<EarlierCommand | null> {
  if (item.kind !== 'message' || item.message.subject == null) return null;
  const contract = commandContracts().find((c) => c.topic === item.message.topic);
  if (!contract) return null;
  const identity = {
    source: commandSourceOf(item.message.source),
    commandType: contract.kind,
    commandId: item.message.subject,
  };
  const { rows } = await pool.query<{ payload: unknown; state: string }>(
    'SELECT payload, state FROM commands WHERE source = $1 AND command_type = $2 AND command_id = $3',
    [identity.source, identity.commandType, identity.commandId],
  );
  const row = rows[0];
  if (!row || sameContent(row.payload, item.message.data)) return null;
  return { ...identity, state: row.state };
}
