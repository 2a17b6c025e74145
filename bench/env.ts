/**
 * What the benches take from the environment, and the schema a bench runs in: DATABASE_URL (the
 * local server's postgres database by default), KAFKA_BROKERS (comma-separated; the local broker
 * by default), and a schema of the bench's own in that database, migrated, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';

/** The database the benches make their schemas in: DATABASE_URL, or the local postgres database. */
export function databaseBase(): string {
  return process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
}

/** The Kafka brokers: KAFKA_BROKERS split at commas, or the local broker. */
export function kafkaBrokers(): string[] {
  return (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');
}

export interface BenchSchema {
  schema: string;
  /** `base` with `?schema=` set to the schema. */
  url: string;
  /** Drops the schema and all it holds. */
  drop(): Promise<void>;
}

/** A schema `<prefix>_<8 hex digits>` in the database of `base`, migrated. */
export async function benchSchema(prefix: string, base: string = databaseBase()): Promise<BenchSchema> {
  const schema = `${prefix}_${randomBytes(4).toString('hex')}`;
  const url = withSchema(base, schema);
  await migrate(url);
  return {
    schema,
    url,
    drop: async () => {
      const client = new pg.Client({ connectionString: parseDatabaseUrl(base).connectionString });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
      await client.end();
    },
  };
}
