import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { MIGRATIONS_DIR, migrate, pendingMigrations, readMigrations } from '../src/db/migrate.js';
import { runCli } from './support/cli.js';

const schemas: string[] = [];
function freshUrl(): string {
  const schema = `m_${randomBytes(5).toString('hex')}`;
  schemas.push(schema);
  return withSchema(inject('databaseUrl'), schema);
}

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const { connectionString, schema } = parseDatabaseUrl(url);
  const client = new pg.Client({ connectionString, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

afterAll(async () => {
  const client = new pg.Client({
    connectionString: parseDatabaseUrl(inject('databaseUrl')).connectionString,
  });
  await client.connect();
  for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(s)} CASCADE`);
  await client.end();
});

describe('rentbridge migrate', () => {
  describe('when the database is empty', () => {
    it('applies every migration and records it in Prisma’s own table, with its checksum', async () => {
      const url = freshUrl();
      const result = await runCli(['migrate'], { DATABASE_URL: url });
      expect(result.code).toBe(0);
      const migrations = await readMigrations();
      const rows = await query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
        url,
        'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" ORDER BY migration_name',
      );
      expect(rows.map((r) => [r.migration_name, r.checksum])).toEqual(
        migrations.map((m) => [m.name, m.checksum]),
      );
      expect(rows.every((r) => r.finished_at !== null)).toBe(true);
      expect(await pendingMigrations(url)).toEqual([]);
    });
  });

  describe('when it runs again', () => {
    it('applies nothing', async () => {
      const url = freshUrl();
      await migrate(url);
      const again = await migrate(url);
      expect(again.applied).toEqual([]);
      const [{ count }] = (await query<{ count: string }>(
        url,
        'SELECT count(*) FROM "_prisma_migrations"',
      )) as [{ count: string }];
      expect(Number(count)).toBe((await readMigrations()).length);
    });
  });

  describe('when two runs start at once', () => {
    it('applies each migration exactly once', async () => {
      const url = freshUrl();
      const [a, b] = await Promise.all([migrate(url), migrate(url)]);
      const total = (await readMigrations()).length;
      expect(a.applied.length + b.applied.length).toBe(total);
      const rows = await query<{ migration_name: string }>(
        url,
        'SELECT migration_name FROM "_prisma_migrations"',
      );
      expect(rows).toHaveLength(total);
    });
  });

  describe('when a migration fails', () => {
    it('rolls it back, records nothing for it, and says which one', async () => {
      const url = freshUrl();
      const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
      await cp(MIGRATIONS_DIR, dir, { recursive: true });
      await mkdir(join(dir, '99990101000000_broken'));
      await writeFile(
        join(dir, '99990101000000_broken', 'migration.sql'),
        'CREATE TABLE ok_then (id int);\nSELECT nope FROM nowhere;',
      );
      await expect(migrate(url, { dir })).rejects.toThrow(/99990101000000_broken/);
      const tables = await query<{ t: string | null }>(url, `SELECT to_regclass('ok_then')::text AS t`);
      expect(tables[0]?.t).toBeNull();
      expect(await pendingMigrations(url)).toEqual([]);
    });
  });
});
