import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSchema } from '../../src/db/database-url.js';
import { createCommandLocks, type CommandLocks } from '../../src/guard/store/command-lock.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const logger = createLogger({ level: 'silent' });

describe('command locks', () => {
  let database: TestDatabase;
  // Two processes' worth of locks on the same schema.
  let a: CommandLocks;
  let b: CommandLocks;
  let seq = 0;
  const id = () => ({
    source: 'acme',
    commandType: 'rental_payment' as const,
    commandId: `cmd-${Date.now().toString(36)}-${++seq}`,
  });

  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
    a = createCommandLocks({ databaseUrl: database.url, logger, pollMs: 50 });
    b = createCommandLocks({ databaseUrl: database.url, logger, pollMs: 50 });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  describe('when another process holds the command', () => {
    it('refuses it until the holder releases it, then hands it over', async () => {
      const command = id();
      const held = await a.tryAcquire(command);
      expect(held?.held).toBe(true);
      expect(await b.tryAcquire(command)).toBeNull();
      expect(await b.acquire(command, { waitMs: 200 })).toBeNull();

      const waiting = b.acquire(command, { waitMs: 5000 });
      await held!.release();
      const taken = await waiting;
      expect(taken?.held).toBe(true);
      expect(await a.tryAcquire(command)).toBeNull();
      await taken!.release();
    });
  });

  describe('when two commands are taken at once', () => {
    it('holds each independently', async () => {
      const [one, two] = await Promise.all([a.tryAcquire(id()), b.tryAcquire(id())]);
      expect(one).not.toBeNull();
      expect(two).not.toBeNull();
      await Promise.all([one!.release(), two!.release()]);
    });
  });

  describe("when the holder's session dies", () => {
    it('frees the command at once and the holder knows it lost the lock', async () => {
      const command = id();
      const held = await a.tryAcquire(command);
      const waiting = b.acquire(command, { waitMs: 10_000 });
      // What a killed process's connection amounts to for PostgreSQL: its session ends.
      const { rows } = await database.sql.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_locks
          WHERE locktype = 'advisory' AND granted
            AND classid = hashtext('rentbridge.command')::oid AND objid = hashtext($1)::oid`,
        [
          `${new URL(database.url).searchParams.get('schema')}:${command.source}\u001f${command.commandType}\u001f${command.commandId}`,
        ],
      );
      expect(rows).toEqual([{ ended: true }]);
      const taken = await waiting;
      expect(taken?.held).toBe(true);
      await expect.poll(() => held!.held).toBe(false);
      await held!.release(); // harmless: the connection is dropped, not reused
      await taken!.release();
    });
  });

  describe('when two commands share an id but not their source or type', () => {
    it('holds each independently: they are two commands', async () => {
      const command = id();
      const held = await Promise.all([
        a.tryAcquire(command),
        b.tryAcquire({ ...command, source: 'beta' }),
        b.tryAcquire({ ...command, commandType: 'application_decision' }),
      ]);
      expect(held.every((l) => l !== null)).toBe(true);
      expect(await b.tryAcquire(command)).toBeNull();
      await Promise.all(held.map((l) => l!.release()));
    });
  });

  describe('when two schemas of one database use the same command id', () => {
    it('does not block one with the other', async () => {
      const other = createCommandLocks({
        databaseUrl: withSchema(database.url, `${new URL(database.url).searchParams.get('schema')}_other`),
        logger,
      });
      try {
        const command = id();
        const mine = await a.tryAcquire(command);
        const theirs = await other.tryAcquire(command);
        expect(mine).not.toBeNull();
        expect(theirs).not.toBeNull();
        await Promise.all([mine!.release(), theirs!.release()]);
      } finally {
        await other.close();
      }
    });
  });
});
