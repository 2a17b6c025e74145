import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../../src/db/database-url.js';
import { migrate } from '../../src/db/migrate.js';
import { createDb, type Db } from '../../src/db/prisma.js';

export interface TestDatabase {
  /** DATABASE_URL of this test's own schema. */
  url: string;
  schema: string;
  db: Db;
  /** A node-postgres pool on the same schema, for assertions in plain SQL. */
  sql: pg.Pool;
  drop(): Promise<void>;
}

/**
 * `createTestDatabase` as hooks of the calling `describe`: created before its tests, dropped after.
 * Read its fields inside tests and hooks.
 */
export function useTestDatabase(): TestDatabase {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());
  return new Proxy({} as TestDatabase, {
    get: (_target, field) => {
      if (!database) throw new Error('useTestDatabase: read its fields inside tests and hooks');
      return database[field as keyof TestDatabase];
    },
  });
}

/** A fresh schema with every migration applied: each test file gets its own. */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const url = withSchema(inject('databaseUrl'), schema);
  if (options.migrate !== false) await migrate(url);
  const db = createDb(url, { max: 5 });
  const { connectionString } = parseDatabaseUrl(url);
  const sql = new pg.Pool({ connectionString, max: 3, options: `-c search_path=${schema}` });
  return {
    url,
    schema,
    db,
    sql,
    async drop() {
      await db.$disconnect();
      await sql.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
      await sql.end();
    },
  };
}

/** Drops `schema` of the test server (one a process of the test made for itself). */
export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({
    connectionString: parseDatabaseUrl(inject('databaseUrl')).connectionString,
  });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  await client.end();
}
