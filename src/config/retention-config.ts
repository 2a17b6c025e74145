import { z } from 'zod';

/**
 * The retention of each table rentbridge writes (docs/retention.md, docs/decisions/042), spread
 * into src/config/config.ts's schema. The outbox and webhook receipts keep OUTBOX_RETENTION_HOURS;
 * the rate-budget slots, waiters and the poller's passes keep only the window they serve.
 */

const days = z.coerce.number().int().positive().max(36_500);
const positiveInt = z.coerce.number().int().positive();

export const retentionSettings = {
  /**
   * How long a final command (applied, already_applied, rejected, exhausted) is kept after it
   * finished: the horizon within which a PMS may send the same command id again and get the same
   * outcome back. A repeat after it is a new command. Never shorter than KAFKA_COMMAND_RETENTION_HOURS
   * (a command topic re-read from its start must find every command it holds). A pending,
   * in-flight or `unverified` command, and one with an open dead letter, is never pruned. Default 90 days.
   */
  COMMAND_RETENTION_DAYS: days.default(90),
  /**
   * How long the guard's attempts of a final command are kept (their command's prunable states as
   * above); they go with their command in any case. Default 90 days.
   */
  COMMAND_ATTEMPT_RETENTION_DAYS: days.default(90),
  /**
   * How long a superseded record version stays in the poller's and receiver's dedupe after it was
   * published (a late copy of it is dropped within that time); the newest version of each record
   * is never pruned, so a full read never republishes an unchanged record. Default 30 days.
   */
  PUBLISHED_VERSION_RETENTION_DAYS: days.default(30),
  /** How long a record seen removed is remembered (its row in known_records). Default 30 days. */
  KNOWN_RECORD_RETENTION_DAYS: days.default(30),
  /** How long a resolved dead letter (redriven, discarded, closed) is kept; an open one is kept until resolved. Default 90 days. */
  DEAD_LETTER_RETENTION_DAYS: days.default(90),
  /**
   * How long audit entries are kept. Pruned only as an oldest-first prefix by id (never a hole),
   * and the newest entry always stays, so a hash-chained trail is verifiable from its new first
   * entry. Default 400 days.
   */
  AUDIT_RETENTION_DAYS: days.default(400),
  /** How long a delivered callback and its attempts are kept; a pending or dead one is kept until delivered. Default 30 days. */
  CALLBACK_RETENTION_DAYS: days.default(30),
  /** How long attempts of a delivered callback are kept (at most as long as their delivery). Default 30 days. */
  CALLBACK_ATTEMPT_RETENTION_DAYS: days.default(30),
  /**
   * How long a record's stored list read (snapshot_reads: one row per record and key) is kept
   * after it was last read or written. A read serves as a snapshot for SNAPSHOT_MAX_AGE_MS only;
   * after that its page is a hint, refreshed by every full poller pass of a record still listed.
   * A row untouched this long is of a record no longer listed or a key no longer used; pruning it
   * costs at most one paged read if that record is written again. Default 7 days.
   */
  SNAPSHOT_READ_RETENTION_DAYS: days.default(7),
  /** Pause between two pruning passes (the relay role runs them). Default 300 s. */
  RETENTION_INTERVAL_SECONDS: positiveInt.default(300),
  /** Most rows deleted per statement: each chunk is its own short transaction. Default 2000. */
  RETENTION_CHUNK_ROWS: positiveInt.max(100_000).default(2000),
  /**
   * Most chunks per table per pass: a year's backlog drains over several passes and the pass never
   * holds the flow; rows left past the horizon set rentbridge_retention_behind. Default 50.
   */
  RETENTION_MAX_CHUNKS_PER_PASS: positiveInt.default(50),
};
