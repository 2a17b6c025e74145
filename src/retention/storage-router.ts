import express, { type Router } from 'express';
import type { Config } from '../config/config.js';
import type { Db } from '../db/prisma.js';
import { tableStorage } from './retention-repository.js';
import { RETAINED_TABLES, type RetainedTable } from './retention-rules.js';

/** The settings the retention of each table is read from (docs/retention.md). */
export type RetentionSettings = Pick<
  Config,
  | 'OUTBOX_RETENTION_HOURS'
  | 'COMMAND_RETENTION_DAYS'
  | 'COMMAND_ATTEMPT_RETENTION_DAYS'
  | 'PUBLISHED_VERSION_RETENTION_DAYS'
  | 'KNOWN_RECORD_RETENTION_DAYS'
  | 'DEAD_LETTER_RETENTION_DAYS'
  | 'AUDIT_RETENTION_DAYS'
  | 'CALLBACK_RETENTION_DAYS'
  | 'CALLBACK_ATTEMPT_RETENTION_DAYS'
  | 'SNAPSHOT_READ_RETENTION_DAYS'
>;

/** What each table keeps, in a line (the console's "retention" column). */
export function retentionText(s: RetentionSettings): Record<string, string> {
  return {
    commands: `final: ${s.COMMAND_RETENTION_DAYS} d after finishing; pending, in flight, unverified: kept`,
    command_attempts: `${s.COMMAND_ATTEMPT_RETENTION_DAYS} d, with their command`,
    published_versions: `superseded: ${s.PUBLISHED_VERSION_RETENTION_DAYS} d; current: kept`,
    known_records: `removed: ${s.KNOWN_RECORD_RETENTION_DAYS} d; present: kept`,
    dead_letters: `resolved: ${s.DEAD_LETTER_RETENTION_DAYS} d; open: kept`,
    audit_log: `${s.AUDIT_RETENTION_DAYS} d, oldest first`,
    callback_deliveries: `delivered: ${s.CALLBACK_RETENTION_DAYS} d; pending, dead: kept`,
    callback_attempts: `${s.CALLBACK_ATTEMPT_RETENTION_DAYS} d after delivery`,
    snapshot_reads: `${s.SNAPSHOT_READ_RETENTION_DAYS} d after last read or written`,
    outbox: `published: ${s.OUTBOX_RETENTION_HOURS} h (the relay)`,
    webhook_receipts: `${s.OUTBOX_RETENTION_HOURS} h, at least the replay window (the receiver)`,
    rate_budget_slots: 'the rolling minute (the budget)',
    rate_budget_waiters: 'until expired (the budget)',
    poller_passes: 'about two hours (the poller)',
    role_heartbeats: 'one row per running process',
    sandbox_state: 'one row: the demo sandbox of npm start (--fresh wipes it)',
  };
}

/**
 * `GET /ops/api/storage`: each table's size and retention, and when the pruner last deleted from
 * it: the console's "Data and retention". Sizes come from PostgreSQL's catalog, never a count.
 */
export function createStorageRouter(options: { db: Db; retention: Record<string, string> }): Router {
  const router = express.Router();
  const pruned = new Set<string>(RETAINED_TABLES);
  router.get('/storage', async (_req, res) => {
    const tables = (await tableStorage(options.db)).map((t) => ({
      ...t,
      retention:
        options.retention[t.table] ?? 'bounded by what it describes (one row per resource, source or budget)',
      /** True for the tables the retention pruner owns (RETAINED_TABLES). */
      pruned: pruned.has(t.table as RetainedTable),
    }));
    res.json({ tables, totalBytes: tables.reduce((n, t) => n + t.tableBytes + t.indexBytes, 0) });
  });
  return router;
}
