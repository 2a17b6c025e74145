import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../../src/db/database-url.js';
import { migrate } from '../../src/db/migrate.js';
import { createDb, type Db } from '../../src/db/prisma.js';
import { countDeadLetters, searchDeadLetters } from '../../src/dead-letters/dead-letter-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { fillHistory } from '../support/history-fill.js';

/**
 * Decision 050: the dead letters' free-text search reads trigram indexes where pg_trgm could be
 * created, and where it cannot (not installed, not allowed) migration 20261127530000 still
 * applies, says so, and the search reads the table with the same answers. pg_trgm is database-wide
 * and the shared test database has it, so this runs in a database of its own whose server refuses
 * CREATE EXTENSION (an event trigger, as a platform that forbids extensions would), and compares
 * its answers with an ordinary schema's holding the same letters.
 */
describe('the dead letters search where pg_trgm cannot be created', () => {
  const database = `t_notrgm_${randomBytes(5).toString('hex')}`;
  const serverUrl = inject('databaseUrl');
  const databaseUrl = (() => {
    const u = new URL(serverUrl);
    u.pathname = `/${database}`;
    return withSchema(u.toString(), 'rentbridge');
  })();
  const admin = (url: string) => new pg.Client({ connectionString: parseDatabaseUrl(url).connectionString });
  let db: Db;
  let sql: pg.Client;
  let withTrgm: TestDatabase;

  beforeAll(async () => {
    const server = admin(serverUrl);
    await server.connect();
    await server.query(`CREATE DATABASE ${quoteIdent(database)}`);
    await server.end();
    sql = admin(databaseUrl);
    await sql.connect();
    await sql.query(`CREATE FUNCTION refuse_extensions() RETURNS event_trigger LANGUAGE plpgsql AS $$
                       BEGIN RAISE EXCEPTION 'extensions are not allowed here'; END $$`);
    await sql.query(`CREATE EVENT TRIGGER refuse_extensions ON ddl_command_start
                       WHEN TAG IN ('CREATE EXTENSION') EXECUTE FUNCTION refuse_extensions()`);
    await migrate(databaseUrl);
    await sql.query(`SET search_path TO rentbridge`);
    db = createDb(databaseUrl, { max: 2 });
    withTrgm = await createTestDatabase();
    const letters = { commands: 0, versions: 0, deadLetters: 2000, audit: 0, outbox: 0 };
    const one = new pg.Pool({
      connectionString: parseDatabaseUrl(databaseUrl).connectionString,
      max: 1,
      options: '-c search_path=rentbridge',
    });
    await fillHistory(one, letters, { spanDays: 30 });
    await one.query('ANALYZE dead_letters');
    await one.end();
    await fillHistory(withTrgm.sql, letters, { spanDays: 30 });
    await withTrgm.sql.query('ANALYZE dead_letters');
  }, 180_000);

  afterAll(async () => {
    await db?.$disconnect();
    await sql?.end();
    await withTrgm?.drop();
    const server = admin(serverUrl);
    await server.connect();
    await server.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
    await server.end();
  });

  it('migrates without the extension or its indexes', async () => {
    const ext = await sql.query(`SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'`);
    expect(ext.rowCount).toBe(0);
    const idx = await sql.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE schemaname = 'rentbridge' AND indexname LIKE '%trgm%'`,
    );
    expect(idx.rows).toEqual([]);
    const applied = await sql.query(
      `SELECT 1 FROM "_prisma_migrations" WHERE migration_name LIKE '20261127530000%' AND finished_at IS NOT NULL`,
    );
    expect(applied.rowCount).toBe(1);
    // And the schema beside it, in the database that has it, does use the indexes.
    const other = await withTrgm.sql.query(
      `SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'dead_letters_value_trgm_idx'`,
      [withTrgm.schema],
    );
    expect(other.rowCount).toBe(1);
  });

  const searches = [
    { search: 'ENR_42', state: 'all' as const },
    { search: 'not accepted', state: 'open' as const },
    { search: 'h-dl-1999', state: 'all' as const },
    { search: '100%', state: 'all' as const },
  ];

  it.each(searches)('answers %o as the indexed search does, by reading the table', async (filters) => {
    const found = async (on: Db) =>
      (await searchDeadLetters(on, { ...filters, limit: 1000 })).map((l) => l.offset);
    const counted = (on: Db) => countDeadLetters(on, filters);
    const [plain, indexed] = [await found(db), await found(withTrgm.db)];
    expect(plain).toEqual(indexed);
    expect(await counted(db)).toEqual(await counted(withTrgm.db));
    if (filters.search === '100%') expect(plain).toEqual([]);
    else expect(plain.length).toBeGreaterThan(0);
  });

  it('reads the table for a search (the fallback decision 050 states)', async () => {
    const { rows } = await sql.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM dead_letters WHERE value ILIKE '%enr\\_42%' OR error_message ILIKE '%enr\\_42%'`,
    );
    expect(rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Seq Scan on dead_letters/);
  });
});
