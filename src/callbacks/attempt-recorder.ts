import type { Db } from '../db/prisma.js';
import type { DeliveryState } from './callback-repository.js';
import type { AttemptOutcome } from './callback-sender.js';

/** One attempt's row and its delivery's next state. */
export interface AttemptRecord {
  deliveryId: string;
  url: string;
  attempt: AttemptOutcome;
  next: { state: DeliveryState; nextAttemptAt: Date | null; failures: number };
}

export interface AttemptRecorder {
  /** Resolves once the attempt and the delivery's new state are stored (with others, in one statement). */
  record(row: AttemptRecord): Promise<void>;
}

const MAX_BATCH = 200;

/**
 * Records attempts in batches (issue 43 item 3): each callback's bookkeeping was a transaction of
 * its own (a batch transaction, which also waited only 2 s for a connection), and with many
 * callbacks in flight those, not the endpoint, set the pace. One statement needs no transaction
 * API and waits in the pool like any query.
 * No timer: while one batch is being written, the attempts that end queue up and go together in
 * the next, so a lone attempt is written at once and a crowd in few statements. A delivery
 * appears at most once per batch; a failed batch fails each of its callers, as a failed single
 * statement did (the delivery is due again when its lease ends).
 */
export function createAttemptRecorder(db: Db): AttemptRecorder {
  const queue: Array<{ row: AttemptRecord; done: (error?: unknown) => void }> = [];
  let writing = false;

  async function drain(): Promise<void> {
    if (writing) return;
    writing = true;
    try {
      while (queue.length > 0) {
        const seen = new Set<string>();
        let n = 0;
        while (n < queue.length && n < MAX_BATCH && !seen.has(queue[n]!.row.deliveryId))
          seen.add(queue[n++]!.row.deliveryId);
        const batch = queue.splice(0, n);
        try {
          await recordAttempts(
            db,
            batch.map((b) => b.row),
          );
          for (const b of batch) b.done();
        } catch (error) {
          for (const b of batch) b.done(error ?? new Error('attempts not recorded'));
        }
      }
    } finally {
      writing = false;
    }
  }

  return {
    record(row) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ row, done: (error) => (error === undefined ? resolve() : reject(error as Error)) });
        void drain();
      });
    },
  };
}

/** Attempts' rows and their deliveries' new states, in one statement. */
async function recordAttempts(db: Db, rows: readonly AttemptRecord[]): Promise<void> {
  await db.$executeRaw`
    WITH input AS (
      SELECT * FROM unnest(
        ${rows.map((r) => BigInt(r.deliveryId))}::bigint[], ${rows.map((r) => r.url)}::text[],
        ${rows.map((r) => r.attempt.result)}::text[], ${rows.map((r) => r.attempt.httpStatus)}::int[],
        ${rows.map((r) => r.attempt.durationMs)}::int[], ${rows.map((r) => r.attempt.error)}::text[],
        ${rows.map((r) => r.next.state)}::text[], ${rows.map((r) => r.next.nextAttemptAt)}::timestamptz[],
        ${rows.map((r) => r.next.failures)}::int[]
      ) AS t(id, url, result, http_status, duration_ms, error, state, next_at, failures)
    ), attempt AS (
      INSERT INTO callback_attempts (delivery_id, url, result, http_status, duration_ms, error)
      SELECT id, url, result, http_status, duration_ms, error FROM input
    )
    UPDATE callback_deliveries d
       SET attempts = d.attempts + 1,
           failures = i.failures,
           state = i.state,
           next_attempt_at = COALESCE(i.next_at, d.next_attempt_at),
           delivered_at = CASE WHEN i.state = 'delivered' THEN now() ELSE d.delivered_at END,
           dead_at = CASE WHEN i.state = 'dead' THEN now() ELSE NULL END,
           last_status = i.http_status,
           last_error = i.error
      FROM input i
     WHERE d.id = i.id`;
}
