import pg from 'pg';
import { parseDatabaseUrl } from '../db/database-url.js';
import type { Logger } from '../logger.js';

/**
 * One poller per resource at a time across processes: a session-level advisory lock held on a
 * dedicated connection for the whole pass. Pooled connections cannot hold a session lock (the
 * pool may hand the connection to someone else), hence the connection of its own. The key
 * includes the schema, so rentbridge instances in different schemas of one database (tests, or
 * several environments) do not block each other. If the connection drops, PostgreSQL releases
 * the locks; the next acquire reconnects.
 */
export interface ResourceLock {
  /** Takes the resource's lock, or answers false at once when another process holds it. */
  tryAcquire(resource: string): Promise<boolean>;
  release(resource: string): Promise<void>;
  close(): Promise<void>;
}

export function createResourceLock(databaseUrl: string, logger: Logger): ResourceLock {
  const { connectionString, schema } = parseDatabaseUrl(databaseUrl);
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  // Session locks are re-entrant within a session: the same process must not run one resource twice.
  const held = new Set<string>();

  async function connection(): Promise<pg.Client> {
    if (client) return client;
    connecting ??= (async () => {
      const c = new pg.Client({
        connectionString,
        options: `-c search_path=${schema}`,
        application_name: 'rentbridge-poller-lock',
      });
      c.on('error', (error) => {
        logger.warn({ err: error }, 'poller lock connection lost: locks released');
        held.clear();
        if (client === c) client = undefined;
      });
      await c.connect();
      client = c;
      return c;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  }

  const key = (resource: string) => `rentbridge.poller:${schema}:${resource}`;

  // One query at a time on the lock connection: passes of several resources start together.
  let queue: Promise<unknown> = Promise.resolve();
  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = queue.then(fn, fn);
    queue = run.catch(() => undefined);
    return run;
  }

  return {
    async tryAcquire(resource) {
      if (held.has(resource)) return false;
      held.add(resource);
      try {
        const { rows } = await serial(async () =>
          (await connection()).query<{ locked: boolean }>(
            'SELECT pg_try_advisory_lock(hashtext($1)) AS locked',
            [key(resource)],
          ),
        );
        if (rows[0]?.locked !== true) held.delete(resource);
        return rows[0]?.locked === true;
      } catch (error) {
        held.delete(resource);
        throw error;
      }
    },
    async release(resource) {
      if (!held.delete(resource)) return;
      await serial(async () => client?.query('SELECT pg_advisory_unlock(hashtext($1))', [key(resource)]));
    },
    async close() {
      held.clear();
      const c = client;
      client = undefined;
      await c?.end();
    },
  };
}
