import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { parseDatabaseUrl } from '../../db/database-url.js';
import type { CommandIdentity } from '../../contracts/command-contracts.js';
import type { Logger } from '../../logger.js';

/**
 * One writer per command (docs/decisions/011-one-writer-per-command.md): while a process works
 * on a command it holds a session-level advisory lock keyed by the command's identity (source +
 * type + id: two commands that share an id are two commands), on a connection of
 * its own. The lock dies with the process: a crash, a kill or a lost connection ends the session
 * and PostgreSQL releases it, so a crashed holder never blocks the command. Another process that
 * meets the command waits for the lock instead of reading back a write still on its way.
 *
 * Pooled Prisma connections cannot hold a session lock (the pool hands them to other queries), so
 * the locks have a pool of their own: one connection per command held at once, i.e. per
 * partition consumed concurrently. The key includes the schema, so rentbridge instances in
 * different schemas of one database never block each other; the two-key form keeps the guard's
 * keys apart from the single-key locks of the poller, relay and budget.
 */
export interface CommandLock {
  /** False once the lock's connection failed: PostgreSQL has released the lock, or will. */
  readonly held: boolean;
  /** Releases the lock (idempotent; never throws: a failed unlock drops the connection instead). */
  release(): Promise<void>;
}

export interface CommandLocks {
  /** Takes the command's lock at once, or answers null when another session holds it. */
  tryAcquire(identity: CommandIdentity): Promise<CommandLock | null>;
  /** Waits up to `waitMs` for the lock; null when another session still holds it then. */
  acquire(
    identity: CommandIdentity,
    options: { waitMs: number; signal?: AbortSignal },
  ): Promise<CommandLock | null>;
  close(): Promise<void>;
}

export interface CommandLocksOptions {
  /** DATABASE_URL (with `?schema=`). */
  databaseUrl: string;
  logger: Logger;
  /**
   * Connections: give it twice the commands handled at once (partitions consumed concurrently),
   * as an unlock may still be on its way while the next command of the partition takes its lock.
   * Default 6.
   */
  max?: number;
  /** How often a waiting process tries the lock again. Default 200 ms. */
  pollMs?: number;
}

// Named: prepared once per connection, as every command runs them.
const TRY_LOCK = `SELECT pg_try_advisory_lock(hashtext('rentbridge.command'), hashtext($1)) AS locked`;
const UNLOCK = `SELECT pg_advisory_unlock(hashtext('rentbridge.command'), hashtext($1)) AS unlocked`;

export function createCommandLocks(options: CommandLocksOptions): CommandLocks {
  const { connectionString, schema } = parseDatabaseUrl(options.databaseUrl);
  const log = options.logger.child({ component: 'command-lock' });
  const pollMs = options.pollMs ?? 200;
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 6,
    application_name: 'rentbridge-command-lock',
    // A holder cut off without a FIN (network partition) must not keep its locks for hours:
    // the server probes the idle session and ends it (~25 s), which releases them.
    options: '-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3',
    keepAlive: true,
  });
  pool.on('error', (error) => log.warn({ err: error }, 'idle command-lock connection lost'));
  // Joined by the unit separator, a control character no command id may hold, so the key of one
  // identity is not that of another; two keys that share a hash only queue up, harmlessly.
  const key = (id: CommandIdentity) => `${schema}:${id.source}\u001f${id.commandType}\u001f${id.commandId}`;
  let closing: Promise<void> | undefined;

  /** Tries on `client` until taken, the deadline passes or `signal` aborts; releases `client` unless taken. */
  async function take(
    identity: CommandIdentity,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<CommandLock | null> {
    const { commandId } = identity;
    const client = await pool.connect();
    let lost = false;
    // A checked-out pg client has no error listener: without one a dropped connection would
    // crash the process. The lock is gone with the session; the guard checks `held` before writing.
    const onError = (error: Error) => {
      lost = true;
      log.warn({ err: error, commandId }, 'command-lock connection lost: lock released');
    };
    client.on('error', onError);
    const deadline = Date.now() + waitMs;
    try {
      for (;;) {
        const { rows } = await client.query<{ locked: boolean }>({
          name: 'rentbridge-command-try-lock',
          text: TRY_LOCK,
          values: [key(identity)],
        });
        if (rows[0]?.locked === true) break;
        if (Date.now() >= deadline) {
          client.removeListener('error', onError);
          client.release();
          return null;
        }
        await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())), undefined, { signal });
      }
    } catch (error) {
      client.removeListener('error', onError);
      client.release(error instanceof Error ? error : true);
      throw error;
    }
    let released: Promise<void> | undefined;
    return {
      get held() {
        return !lost;
      },
      release() {
        released ??= (async () => {
          try {
            const { rows } = await client.query<{ unlocked: boolean }>({
              name: 'rentbridge-command-unlock',
              text: UNLOCK,
              values: [key(identity)],
            });
            client.removeListener('error', onError);
            // Not ours any more (should not happen): drop the session rather than reuse it.
            client.release(rows[0]?.unlocked === true ? undefined : true);
          } catch (error) {
            log.warn({ err: error, commandId }, 'command unlock failed: dropping its connection');
            client.removeListener('error', onError);
            client.release(true);
          }
        })();
        return released;
      },
    };
  }

  return {
    tryAcquire: (identity) => take(identity, 0),
    acquire: (identity, { waitMs, signal }) => take(identity, waitMs, signal),
    async close() {
      closing ??= pool.end();
      await closing;
    },
  };
}
