import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { UsageError } from '../../src/errors.js';
import { startEmbeddedPostgres } from '../../src/dev/local-servers/embedded-postgres.js';
import { startLocalServers } from '../../src/dev/local-servers/local-servers.js';
import { answers } from '../../src/dev/local-servers/ports.js';
import { projectRoot } from '../../src/dev/local-servers/project-root.js';
import { createLogger } from '../../src/logger.js';
import { freePort } from '../support/free-port.js';

const logger = createLogger({ level: 'silent' });

async function query(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

describe('the embedded PostgreSQL of npm start', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rentbridge-pg-'));
    // As root the server runs as `postgres`, which walks through this folder.
    await chmod(dir, 0o755);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  describe('when nothing answers on its port', () => {
    it('starts a real PostgreSQL that takes the migrations, and keeps its data across a restart', async () => {
      const port = await freePort();
      const paths = { dataDir: join(dir, 'data'), logFile: join(dir, 'postgres.log'), port };
      const first = await startEmbeddedPostgres(paths);
      try {
        expect(first.initialised).toBe(true);
        expect(first.url).toBe(`postgresql://postgres@127.0.0.1:${port}/postgres`);
        await migrate(first.url, { logger });
        await query(
          first.url,
          'CREATE TABLE kept_across_restart (id int); INSERT INTO kept_across_restart VALUES (42)',
        );
      } finally {
        await first.stop();
      }
      expect(await answers('127.0.0.1', port)).toBe(false);

      const second = await startEmbeddedPostgres(paths);
      try {
        expect(second.initialised).toBe(false);
        const { rows } = await query(second.url, 'SELECT id FROM kept_across_restart');
        expect(rows).toEqual([{ id: 42 }]);
      } finally {
        await second.stop();
      }
    });
  });

  describe('when npm start is asked for --fresh', () => {
    it('starts the embedded server on an empty cluster, and stops it with the rest', async () => {
      const port = await freePort();
      const start = (fresh: boolean) =>
        startLocalServers({
          root: projectRoot(),
          pgDir: join(dir, 'fresh'),
          env: { KAFKA_BROKERS: 'configured:9092' },
          pgPort: port,
          kafkaPort: 9092,
          fresh,
          logger,
        });
      const first = await start(false);
      await query(first.databaseUrl!, 'CREATE TABLE wiped_by_fresh (id int)');
      await first.stop();

      const again = await start(true);
      try {
        expect(again.kafkaBrokers).toBeUndefined();
        const { rows } = await query(again.databaseUrl!, "SELECT to_regclass('wiped_by_fresh') AS t");
        expect(rows).toEqual([{ t: null }]);
      } finally {
        await again.stop();
      }
      expect(await answers('127.0.0.1', port)).toBe(false);
    });
  });

  describe('when a PostgreSQL and a broker already answer on the local ports', () => {
    it('uses them and leaves them running when it stops', async () => {
      const port = await freePort();
      const running = await startEmbeddedPostgres({
        dataDir: join(dir, 'running', 'data'),
        logFile: join(dir, 'running', 'postgres.log'),
        port,
      });
      try {
        // The suite's broker: found on its local port like a broker already running (when it is local).
        const brokers = inject('kafkaBrokers');
        const [host, kafkaPort] = brokers.split(',')[0]!.split(':');
        const isLocal = host === '127.0.0.1' || host === 'localhost';
        const local = await startLocalServers({
          root: projectRoot(),
          pgDir: join(dir, 'unused'),
          env: isLocal ? {} : { KAFKA_BROKERS: brokers },
          pgPort: port,
          kafkaPort: Number(kafkaPort),
          logger,
        });
        expect(local.databaseUrl).toBe(`postgresql://postgres@127.0.0.1:${port}/postgres`);
        if (isLocal) expect(local.kafkaBrokers).toEqual([`127.0.0.1:${kafkaPort}`]);
        await local.stop();
        expect(await query(running.url, 'SELECT 1 AS one')).toMatchObject({ rows: [{ one: 1 }] });
        if (isLocal) expect(await answers('127.0.0.1', Number(kafkaPort))).toBe(true);
      } finally {
        await running.stop();
      }
    });
  });

  describe('when its data folder cannot be written by the server user', () => {
    it('refuses with a usage error naming the folder and the ways out', async () => {
      const closed = join(dir, 'closed');
      const dataDir = join(closed, 'inner', 'data');
      // Root can write anywhere, but the `postgres` user it runs the server as cannot walk a 0700
      // folder; a user that is not root cannot write a 0500 one.
      await mkdir(join(closed, 'inner'), { recursive: true });
      await chmod(closed, process.getuid?.() === 0 ? 0o700 : 0o500);
      const error = await startEmbeddedPostgres({
        dataDir,
        logFile: join(dir, 'closed.log'),
        port: await freePort(),
      }).catch((e: unknown) => e);
      await chmod(closed, 0o755);
      expect(error).toBeInstanceOf(UsageError);
      expect((error as Error).message).toContain(dataDir);
      expect((error as Error).message).toMatch(/LOCAL_PG_DIR|DATABASE_URL/);
    });
  });
});
