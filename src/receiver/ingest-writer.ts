import pg from 'pg';
import { parseDatabaseUrl } from '../db/database-url.js';
import type { Db } from '../db/prisma.js';
import { anyPublished, recordChanges } from '../changes/record-changes.js';
import type { Logger } from '../logger.js';
import { OUTBOX_CHANNEL, type Tx } from '../outbox/outbox-repository.js';
import { createRelayWaker } from '../outbox/relay-waker.js';
import type { IngestItem, MessageItem, StateChangeItem } from './ingest-items.js';
import { conflictingCommand, type EarlierCommand } from './command-conflict.js';
import { writeMessages } from './message-writer.js';
import { insertReceipts, receiptKey } from './receipt-repository.js';

/**
 * Makes accepted webhooks durable: the receipt (the dedupe) and the outbox row in ONE
 * transaction, the caller's 2xx only after its commit.
 *
 * Group commit: webhooks that arrive while a transaction is committing wait and share the next
 * one, so under load one commit (one WAL flush) acknowledges many webhooks, and with no load a
 * webhook is written at once (no timer). If a shared transaction fails, each of its webhooks is
 * retried alone so that one bad webhook cannot fail the others.
 *
 * The relay is woken after the commit, not inside it (see `wakeRelay`): a NOTIFY in the
 * transaction holds PostgreSQL's cluster-wide notify lock through the WAL flush, so that the
 * writers' commits could never share a flush.
 */

export type { IngestItem, MessageItem, StateChangeItem } from './ingest-items.js';

export type IngestResult =
  /** Written; `eventId` is absent when the record's version was already published. */
  | { duplicate: false; eventId?: string }
  /** The webhook-id was seen before: nothing written. */
  | { duplicate: true };

export interface IngestWriter {
  /** Rejects with a StorageTimeoutError when PostgreSQL did not answer in time (see `timeoutMs`). */
  write(item: IngestItem): Promise<IngestResult>;
  /** How long the oldest write in hand has waited (0 when none): readiness reads it. */
  oldestWaitMs(): number;
  /**
   * Reads the receipts table through the writer's own pool, bounded by `timeoutMs`: a table
   * locked or a PostgreSQL that does not answer fails it, as it would fail the writes.
   */
  probe(): Promise<void>;
  /**
   * The command already in PostgreSQL under this item's identity with other content, if any
   * (src/receiver/command-conflict.ts): the receiver answers 409 for it.
   */
  conflictOf?(item: IngestItem): Promise<EarlierCommand | null>;
  /** Waits for the writes in hand. */
  close(): Promise<void>;
}

export interface IngestWriterOptions {
  db: Db;
  /** DATABASE_URL: commands and unrouted events are written through a pool of their own. */
  databaseUrl: string;
  logger: Logger;
  /** Most webhooks per transaction. Default 200. */
  maxBatch?: number;
  /** Transactions in flight at once (each holds a connection); fewer means larger groups. Default 2. */
  concurrency?: number;
  /**
   * Longest wait for PostgreSQL per write (WEBHOOK_STORAGE_TIMEOUT_MS), also the statements'
   * statement_timeout. A write already in a transaction is answered by its outcome instead, within
   * about twice this plus a second, so that a StorageTimeoutError means nothing was stored.
   * Default 5000 ms.
   */
  timeoutMs?: number;
}

/** PostgreSQL did not answer in time: nothing was acknowledged, the sender should retry. */
export class StorageTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`PostgreSQL did not answer within ${timeoutMs} ms`);
    this.name = 'StorageTimeoutError';
  }
}

interface Pending {
  item: IngestItem;
  since: number;
  resolve(result: IngestResult): void;
  reject(error: unknown): void;
}

/** How long past its statement_timeout a write in a transaction waits for the transaction's answer. */
const ANSWER_GRACE_MS = 1000;

export function createIngestWriter(options: IngestWriterOptions): IngestWriter {
  const { db, logger } = options;
  const maxBatch = options.maxBatch ?? 200;
  const concurrency = options.concurrency ?? 2;
  const timeoutMs = options.timeoutMs ?? 5000;
  const queue: Pending[] = [];
  /** Every write not answered yet, queued or in a transaction. */
  const unanswered = new Set<Pending>();
  const inFlight = new Set<Promise<void>>();
  /** Start time of each transaction in flight (one whose writes all timed out still holds a connection). */
  const inFlightSince = new Map<Promise<void>, number>();
  const { connectionString, schema } = parseDatabaseUrl(options.databaseUrl);
  const pool = new pg.Pool({
    connectionString,
    // One more than the writers: the relay's wake-up never waits behind a batch.
    max: concurrency + 1,
    options: `-c search_path=${schema}`,
    application_name: 'rentbridge-receiver',
    // Bounded on the server too: a statement waiting on a lock is cancelled and rolled back.
    statement_timeout: timeoutMs,
    connectionTimeoutMillis: timeoutMs,
  });
  pool.on('error', (error) => logger.warn({ err: error }, 'idle receiver connection failed'));

  /**
   * Wakes the relay once rows are committed (messages and state changes alike): one NOTIFY at a
   * time, coalesced (batches committed while one is on its way share the next). Its own short
   * transaction with synchronous_commit off: the NOTIFY is a wake-up, not data (the rows were
   * committed and flushed before the 2xx), so its commit need not wait for a flush and holds the
   * notify lock only briefly.
   */
  const relayWaker = createRelayWaker(
    () => pool.query(`BEGIN; SET LOCAL synchronous_commit TO off; NOTIFY ${OUTBOX_CHANNEL}; COMMIT`),
    logger,
  );
  const wakeRelay = () => relayWaker.wake();

  function pump(): void {
    while (queue.length > 0 && inFlight.size < concurrency) {
      const batch = queue.splice(0, maxBatch);
      const run = commit(batch).finally(() => {
        inFlight.delete(run);
        inFlightSince.delete(run);
        pump();
      });
      inFlight.add(run);
      inFlightSince.set(run, Date.now());
    }
  }

  async function commit(batch: Pending[]): Promise<void> {
    try {
      const results = await writeBatch(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(results[i]!));
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      logger.warn(
        { err: error, size: batch.length },
        'shared webhook transaction failed: writing each alone',
      );
      await Promise.all(batch.map((p) => commit([p])));
    }
  }

  async function writeBatch(items: IngestItem[]): Promise<IngestResult[]> {
    // The same webhook-id twice in one batch: the first is written, the rest are duplicates.
    const seen = new Set<string>();
    const messages: MessageItem[] = [];
    const changes: StateChangeItem[] = [];
    for (const item of items) {
      const key = receiptKey(item.source, item.webhookId);
      if (seen.has(key)) continue;
      seen.add(key);
      if (item.kind === 'message') messages.push(item);
      else changes.push(item);
    }
    const results = new Map<IngestItem, IngestResult>();
    // Two transactions at most, each atomic for its webhooks; the answers wait for both.
    await Promise.all([
      writeMessages(pool, messages).then((fresh) => {
        if (fresh.size > 0) wakeRelay();
        for (const m of messages) {
          if (fresh.has(receiptKey(m.source, m.webhookId))) {
            results.set(m, { duplicate: false, eventId: m.message.eventId });
          }
        }
      }),
      changes.length === 0
        ? undefined
        : db
            .$transaction((tx) => writeStateChanges(tx, changes, results), {
              maxWait: timeoutMs,
              timeout: timeoutMs,
            })
            .then((published) => {
              if (published) wakeRelay();
            }),
    ]);
    return items.map((item) => results.get(item) ?? { duplicate: true });
  }

  return {
    write(item) {
      return new Promise<IngestResult>((resolve, reject) => {
        const giveUp = () => {
          unanswered.delete(pending);
          reject(new StorageTimeoutError(timeoutMs));
        };
        let timer = setTimeout(() => {
          const at = queue.indexOf(pending);
          if (at >= 0) {
            // Still queued: it never reaches PostgreSQL.
            queue.splice(at, 1);
            giveUp();
            return;
          }
          // In a transaction, which started after this write was queued: its statements reach
          // statement_timeout a little later, so a 503 now could be followed by a commit. Its
          // outcome answers instead, so that a 503 always means nothing stored. Past a second
          // bound, with a grace beyond the statement's own timeout (a cancellation that lands a
          // moment late must still be the answer: under load the two raced, and a 503 was
          // followed by a commit), PostgreSQL is not answering at all: given up on (should the
          // transaction commit all the same, the sender's retry is answered as a duplicate).
          timer = setTimeout(giveUp, timeoutMs + ANSWER_GRACE_MS);
        }, timeoutMs);
        const settle = () => {
          clearTimeout(timer);
          unanswered.delete(pending);
        };
        const pending: Pending = {
          item,
          since: Date.now(),
          resolve: (r) => {
            settle();
            resolve(r);
          },
          reject: (e) => {
            settle();
            reject(e);
          },
        };
        unanswered.add(pending);
        queue.push(pending);
        pump();
      });
    },
    conflictOf: (item) => conflictingCommand(pool, item),
    async probe() {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          pool.query('SELECT 1 FROM webhook_receipts LIMIT 1'),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new StorageTimeoutError(timeoutMs)), timeoutMs);
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
    oldestWaitMs() {
      let oldest = Infinity;
      for (const p of unanswered) oldest = Math.min(oldest, p.since);
      for (const since of inFlightSince.values()) oldest = Math.min(oldest, since);
      return oldest === Infinity ? 0 : Date.now() - oldest;
    },
    async close() {
      while (inFlight.size > 0) await Promise.all([...inFlight]);
      await relayWaker.idle();
      await pool.end();
    },
  };
}

/**
 * Partner changes go through the one write path the poller shares (a Prisma transaction). Answers
 * whether anything was enqueued: the caller wakes the relay after the commit.
 */
async function writeStateChanges(
  tx: Tx,
  changes: StateChangeItem[],
  results: Map<IngestItem, IngestResult>,
): Promise<boolean> {
  const fresh = await insertReceipts(tx, changes);
  const accepted = changes.filter((item) => fresh.has(receiptKey(item.source, item.webhookId)));
  const recorded = await recordChanges(
    tx,
    accepted.map((item) => ({ ...item.change, via: 'webhook' as const })),
  );
  accepted.forEach((item, i) => {
    const r = recorded[i];
    results.set(item, r?.published ? { duplicate: false, eventId: r.eventId } : { duplicate: false });
  });
  return anyPublished(recorded);
}
