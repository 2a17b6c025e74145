import { describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/prisma.js';
import { isRetriable } from '../../src/errors.js';
import { freePort } from '../support/free-port.js';
import { useTestDatabase } from '../support/db.js';

/**
 * The retry verdict on errors PostgreSQL really raises through Prisma's driver adapter. A raw query
 * answers every failure with P2010 and keeps PostgreSQL's SQLSTATE inside `meta`; the chaos run
 * (CI, stop 56) found a crashed server's `57P03 the database system is starting up` called a bug,
 * which stopped every command consumer for good.
 */
describe('the retry verdict on real PostgreSQL failures', () => {
  const database = useTestDatabase();

  const failureOf = async (work: () => Promise<unknown>): Promise<unknown> => {
    try {
      await work();
    } catch (error) {
      return error;
    }
    throw new Error('the query did not fail');
  };

  it('tries again when the server is not there (raw query and model query)', async () => {
    const gone = createDb(`postgresql://postgres@127.0.0.1:${await freePort()}/postgres`);
    try {
      expect(isRetriable(await failureOf(() => gone.$queryRaw`SELECT 1`))).toBe(true);
      expect(isRetriable(await failureOf(() => gone.command.findFirst()))).toBe(true);
    } finally {
      await gone.$disconnect();
    }
  });

  it('tries again when the server ends the session (57P01, as in a shutdown)', async () => {
    const error = await failureOf(() => database.db.$queryRaw`SELECT pg_terminate_backend(pg_backend_pid())`);
    expect(error).toMatchObject({ code: 'P2010' });
    expect(isRetriable(error)).toBe(true);
  });

  it('tries again when the server cancels the statement (57014)', async () => {
    const error = await failureOf(() =>
      database.db.$transaction(async (tx) => {
        await tx.$executeRawUnsafe('SET LOCAL statement_timeout = 10');
        await tx.$queryRaw`SELECT pg_sleep(2)`;
      }),
    );
    expect(isRetriable(error)).toBe(true);
  });

  it('does not retry an error in the statement itself (a bug: 22012 division by zero)', async () => {
    const error = await failureOf(() => database.db.$queryRaw`SELECT 1 / 0`);
    expect(error).toMatchObject({ code: 'P2010' });
    expect(isRetriable(error)).toBe(false);
  });
});
