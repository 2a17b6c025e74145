import pg from 'pg';
import { parseDatabaseUrl } from '../db/database-url.js';
import type { Logger } from '../logger.js';
import { OUTBOX_CHANNEL } from './outbox-repository.js';

/**
 * The relay's own PostgreSQL session: it LISTENs on the outbox channel and holds the advisory
 * lock that makes one relay the publisher (docs/decisions/001-relay-ordering.md). Both live and
 * die with the session, so a lost connection means: no longer the publisher, reconnect.
 */

export interface OutboxListener {
  /** Connects (once) if needed; true when this session holds the publisher lock. */
  tryLead(): Promise<boolean>;
  isLeader(): boolean;
  close(): Promise<void>;
}

export function createOutboxListener(options: {
  databaseUrl: string;
  logger: Logger;
  onNotify: () => void;
  /** Called when the session is lost (the lock with it). */
  onLost: () => void;
}): OutboxListener {
  const { connectionString, schema } = parseDatabaseUrl(options.databaseUrl);
  let client: pg.Client | null = null;
  let leader = false;
  let closed = false;

  let connecting: Promise<pg.Client> | null = null;

  /** One session at a time: concurrent callers share the connection attempt. */
  function connect(): Promise<pg.Client> {
    if (client) return Promise.resolve(client);
    connecting ??= open().finally(() => {
      connecting = null;
    });
    return connecting;
  }

  async function open(): Promise<pg.Client> {
    const c = new pg.Client({
      connectionString,
      options: `-c search_path=${schema}`,
      application_name: 'rentbridge-relay',
      keepAlive: true,
    });
    c.on('notification', () => options.onNotify());
    c.on('error', (error) => {
      options.logger.warn({ err: error }, 'relay session lost: reconnecting');
      drop(c);
    });
    c.on('end', () => drop(c));
    try {
      await c.connect();
      await c.query(`LISTEN ${OUTBOX_CHANNEL}`);
    } catch (error) {
      await c.end().catch(() => undefined);
      throw error;
    }
    if (closed) {
      await c.end().catch(() => undefined);
      throw new Error('relay session closed');
    }
    client = c;
    return c;
  }

  function drop(c: pg.Client): void {
    if (client !== c) return;
    client = null;
    const wasLeader = leader;
    leader = false;
    c.end().catch(() => undefined);
    if (!closed && wasLeader) options.onLost();
  }

  return {
    async tryLead() {
      if (closed) return false;
      if (leader && client) return true;
      const c = await connect();
      // One lock per schema: each deployment (and each test schema) has its own publisher.
      const { rows } = await c.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_lock(hashtext($1)) AS locked',
        [`rentbridge.relay:${schema}`],
      );
      leader = rows[0]?.locked === true;
      return leader;
    },
    isLeader: () => leader && client !== null,
    async close() {
      closed = true;
      leader = false;
      const c = client;
      client = null;
      // Ending the session releases the lock.
      await c?.end().catch(() => undefined);
    },
  };
}
