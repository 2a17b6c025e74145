import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Logger } from '../logger.js';
import { parseDatabaseUrl, quoteIdent } from './database-url.js';

/**
 * Applies prisma/migrations/* in order, keeping Prisma's own bookkeeping (`_prisma_migrations`,
 * the same columns, checksums and advisory lock key as `prisma migrate deploy`), so either tool
 * can take over from the other. Prisma's schema engine cannot run on every machine we deploy to;
 * this runner needs only node-postgres.
 */

// From src/db (tsx) or dist/src/db (compiled), prisma/ sits at the package root.
const toRoot = import.meta.url.includes('/dist/') ? '../../../' : '../../';
export const MIGRATIONS_DIR = fileURLToPath(new URL(`${toRoot}prisma/migrations`, import.meta.url));
/** The lock key `prisma migrate` takes: two runners, of either kind, never apply at once. */
const PRISMA_ADVISORY_LOCK = 72707369;

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: number;
}

export class MigrationError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MigrationError';
  }
}

export async function readMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

const CREATE_BOOKKEEPING = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id"                  VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum"            VARCHAR(64) NOT NULL,
  "finished_at"         TIMESTAMPTZ,
  "migration_name"      VARCHAR(255) NOT NULL,
  "logs"                TEXT,
  "rolled_back_at"      TIMESTAMPTZ,
  "started_at"          TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

async function withClient<T>(databaseUrl: string, fn: (client: pg.Client, schema: string) => Promise<T>) {
  const { connectionString, schema } = parseDatabaseUrl(databaseUrl);
  const client = new pg.Client({ connectionString, application_name: 'rentbridge-migrate' });
  await client.connect();
  try {
    await client.query(`SET search_path TO ${quoteIdent(schema)}`);
    return await fn(client, schema);
  } finally {
    await client.end();
  }
}

async function appliedMigrations(client: pg.Client, schema: string): Promise<AppliedRow[] | null> {
  const exists = await client.query(`SELECT to_regclass($1) AS t`, [
    `${quoteIdent(schema)}."_prisma_migrations"`,
  ]);
  if (!exists.rows[0]?.t) return null;
  const rows = await client.query<AppliedRow>(
    `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" ORDER BY started_at`,
  );
  return rows.rows;
}

/** Applies every pending migration. Re-running is a no-op; concurrent runs wait on the lock. */
export async function migrate(
  databaseUrl: string,
  options: { logger?: Logger; dir?: string } = {},
): Promise<MigrateResult> {
  const migrations = await readMigrations(options.dir);
  const log = options.logger?.child({ component: 'migrate' });
  return withClient(databaseUrl, async (client, schema) => {
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_ADVISORY_LOCK]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
      await client.query(CREATE_BOOKKEEPING);
      const done = new Map(
        ((await appliedMigrations(client, schema)) ?? [])
          .filter((r) => r.rolled_back_at === null)
          .map((r) => [r.migration_name, r]),
      );
      const applied: string[] = [];
      for (const m of migrations) {
        const row = done.get(m.name);
        if (row?.finished_at) {
          if (row.checksum !== m.checksum) {
            log?.warn({ migration: m.name }, 'applied migration was modified since it was applied');
          }
          continue;
        }
        if (row) {
          throw new MigrationError(
            `migration ${m.name} started but did not finish (as Prisma's P3009); resolve it with \`prisma migrate resolve\` before migrating again`,
          );
        }
        // Debug: one line each is start-up chatter; `migrations done` (info) says how many.
        log?.debug({ migration: m.name, schema }, 'applying migration');
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query(
            `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
             VALUES ($1, $2, $3, now(), now(), 1)`,
            [randomUUID(), m.checksum, m.name],
          );
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw new MigrationError(`migration ${m.name} failed: ${(error as Error).message}`, {
            cause: error,
          });
        }
        applied.push(m.name);
      }
      log?.info(
        { applied: applied.length, alreadyApplied: migrations.length - applied.length },
        'migrations done',
      );
      return { applied, alreadyApplied: migrations.length - applied.length };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_ADVISORY_LOCK]);
    }
  });
}

/** Names of migrations not yet applied (for /readyz). */
export async function pendingMigrations(databaseUrl: string): Promise<string[]> {
  const migrations = await readMigrations();
  return withClient(databaseUrl, async (client, schema) => {
    const rows = (await appliedMigrations(client, schema)) ?? [];
    const done = new Set(rows.filter((r) => r.finished_at && !r.rolled_back_at).map((r) => r.migration_name));
    return migrations.filter((m) => !done.has(m.name)).map((m) => m.name);
  });
}
