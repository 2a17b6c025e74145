import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@prisma/client';
import { parseDatabaseUrl } from './database-url.js';

export type Db = PrismaClient;

/**
 * A Prisma client in driver-adapter mode (no native engine). The schema of `?schema=` is both
 * Prisma's and the connection's search_path, so raw SQL in repositories finds the same tables.
 */
export function createDb(databaseUrl: string, options: { max?: number } = {}): Db {
  const { connectionString, schema } = parseDatabaseUrl(databaseUrl);
  const adapter = new PrismaPg(
    {
      connectionString,
      max: options.max ?? 10,
      options: `-c search_path=${schema}`,
      application_name: 'rentbridge',
    },
    { schema },
  );
  return new PrismaClient({ adapter });
}
