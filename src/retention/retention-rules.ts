import type { Config } from '../config/config.js';

/**
 * What the retention pruner deletes from each table it owns, and why that much is safe
 * (docs/retention.md, docs/decisions/042). Each rule selects one chunk of prunable rows: rows past
 * the table's horizon (`$1`, a timestamptz) that no promise still needs, oldest first, at most `$2`
 * of them, locked so that the chunk's DELETE is the only one touching them.
 *
 * Rows another transaction holds (the guard updating a command, say) are skipped (SKIP LOCKED):
 * pruning never waits on the flow; a skipped row goes on a later pass. The audit trail is the
 * exception: it is deleted strictly as an oldest-first prefix by id, never skipping a row, so a
 * hash-chained trail stays verifiable from its new first entry (one pruner at a time holds it,
 * the advisory lock in retention-repository.ts).
 */

export const RETAINED_TABLES = [
  'commands',
  'command_attempts',
  'published_versions',
  'known_records',
  'dead_letters',
  'audit_log',
  'callback_deliveries',
  'callback_attempts',
  'snapshot_reads',
] as const;
export type RetainedTable = (typeof RETAINED_TABLES)[number];

export interface RetentionRule {
  table: RetainedTable;
  /** Rows older than this many days (by the rule's own time column) may go. */
  days: number;
  /** The SELECT of one chunk's row locators (`ctid` or `id`), `$1` the cutoff, `$2` the chunk size. */
  chunk: string;
  /** The column the chunk's locators match: `ctid` or `id`. */
  locator: 'ctid' | 'id';
}

/**
 * The final states a command may be pruned in. Never `pending` or `in_flight` (the flow owns
 * them) nor `unverified` (parked for ops: its evidence is the row and its attempts).
 */
export const PRUNABLE_COMMAND_STATES = ['applied', 'already_applied', 'rejected', 'exhausted'] as const;
const STATES = PRUNABLE_COMMAND_STATES.map((s) => `'${s}'`).join(', ');

/** A dead letter still open names a command a redrive would run again: its guard row stays. */
const NO_OPEN_LETTER = (c: string) => `NOT EXISTS (
  SELECT 1 FROM dead_letters d
   WHERE d.command_id = ${c}.command_id AND d.state = 'open'
     AND (d.command_source IS NULL OR d.command_source = ${c}.source))`;

const CHUNKS: Record<RetainedTable, Pick<RetentionRule, 'chunk' | 'locator'>> = {
  // A final command past its horizon; its attempts go with it (ON DELETE CASCADE).
  commands: {
    locator: 'ctid',
    chunk: `SELECT c.ctid FROM commands c
      WHERE c.finished_at < $1 AND c.state IN (${STATES}) AND ${NO_OPEN_LETTER('c')}
      ORDER BY c.finished_at LIMIT $2 FOR UPDATE OF c SKIP LOCKED`,
  },
  // Attempts of a command that could itself be pruned, past their own horizon.
  command_attempts: {
    locator: 'id',
    chunk: `SELECT a.id FROM command_attempts a
      JOIN commands c ON c.source = a.source AND c.command_type = a.command_type AND c.command_id = a.command_id
      WHERE a.started_at < $1 AND c.state IN (${STATES}) AND ${NO_OPEN_LETTER('c')}
      ORDER BY a.started_at LIMIT $2 FOR UPDATE OF a SKIP LOCKED`,
  },
  // Every version but the one known_records names as a present record's current one: that one is
  // what a full read of an unchanged record is deduped against, whatever its age.
  published_versions: {
    locator: 'ctid',
    chunk: `SELECT v.ctid FROM published_versions v
      WHERE v.published_at < $1 AND NOT EXISTS (
        SELECT 1 FROM known_records k
         WHERE k.resource = v.resource AND k.record_id = v.record_id
           AND k.updated_at = v.updated_at AND k.removed_at IS NULL)
      ORDER BY v.published_at LIMIT $2 FOR UPDATE OF v SKIP LOCKED`,
  },
  // Records seen removed long ago; a present record's row is its current state and stays.
  known_records: {
    locator: 'ctid',
    chunk: `SELECT k.ctid FROM known_records k
      WHERE k.removed_at IS NOT NULL AND k.removed_at < $1
      ORDER BY k.removed_at LIMIT $2 FOR UPDATE OF k SKIP LOCKED`,
  },
  // Resolved letters only: an open one stays until ops redrive, discard or close it.
  dead_letters: {
    locator: 'id',
    chunk: `SELECT id FROM dead_letters
      WHERE state <> 'open' AND resolved_at < $1
      ORDER BY resolved_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
  },
  // An oldest-first prefix by id: every entry before the first one younger than the horizon, and
  // never the newest entry (the chain keeps an anchor). No SKIP LOCKED: a skipped row would be a hole.
  audit_log: {
    locator: 'id',
    chunk: `SELECT a.id FROM audit_log a
      WHERE a.id < LEAST(
        (SELECT max(id) FROM audit_log),
        coalesce((SELECT y.id FROM audit_log y WHERE y.at >= $1 ORDER BY y.id LIMIT 1), 9223372036854775807))
      ORDER BY a.id LIMIT $2 FOR UPDATE OF a`,
  },
  // Delivered callbacks only (their attempts go with them): pending and dead ones stay until delivered.
  callback_deliveries: {
    locator: 'id',
    chunk: `SELECT id FROM callback_deliveries
      WHERE state = 'delivered' AND delivered_at < $1
      ORDER BY delivered_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
  },
  // Attempts of deliveries delivered before the horizon (no attempt is later than its delivery's 2xx).
  callback_attempts: {
    locator: 'id',
    chunk: `SELECT a.id FROM callback_deliveries d JOIN callback_attempts a ON a.delivery_id = d.id
      WHERE d.state = 'delivered' AND d.delivered_at < $1
      ORDER BY d.delivered_at, a.id LIMIT $2 FOR UPDATE OF a SKIP LOCKED`,
  },
  // A record's stored read untouched (neither read nor written) past the horizon: only its page
  // hint was left (a read serves as a snapshot for minutes), and the poller's passes refresh every
  // listed record, so what goes is of records no longer listed or keys no longer used.
  snapshot_reads: {
    locator: 'ctid',
    chunk: `SELECT s.ctid FROM snapshot_reads s
      WHERE greatest(s.asked_at, s.wrote_at) < $1
      ORDER BY greatest(s.asked_at, s.wrote_at) LIMIT $2 FOR UPDATE OF s SKIP LOCKED`,
  },
};

/** The rules of every retained table, with the configured horizons. */
export function retentionRules(
  config: Pick<
    Config,
    | 'COMMAND_RETENTION_DAYS'
    | 'COMMAND_ATTEMPT_RETENTION_DAYS'
    | 'PUBLISHED_VERSION_RETENTION_DAYS'
    | 'KNOWN_RECORD_RETENTION_DAYS'
    | 'DEAD_LETTER_RETENTION_DAYS'
    | 'AUDIT_RETENTION_DAYS'
    | 'CALLBACK_RETENTION_DAYS'
    | 'CALLBACK_ATTEMPT_RETENTION_DAYS'
    | 'SNAPSHOT_READ_RETENTION_DAYS'
  >,
): RetentionRule[] {
  const days: Record<RetainedTable, number> = {
    commands: config.COMMAND_RETENTION_DAYS,
    command_attempts: config.COMMAND_ATTEMPT_RETENTION_DAYS,
    published_versions: config.PUBLISHED_VERSION_RETENTION_DAYS,
    known_records: config.KNOWN_RECORD_RETENTION_DAYS,
    dead_letters: config.DEAD_LETTER_RETENTION_DAYS,
    audit_log: config.AUDIT_RETENTION_DAYS,
    callback_deliveries: config.CALLBACK_RETENTION_DAYS,
    callback_attempts: config.CALLBACK_ATTEMPT_RETENTION_DAYS,
    snapshot_reads: config.SNAPSHOT_READ_RETENTION_DAYS,
  };
  return RETAINED_TABLES.map((table) => ({ table, days: days[table], ...CHUNKS[table] }));
}
