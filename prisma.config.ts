// Prisma CLI configuration. The JavaScript schema engine (with the pg driver adapter) needs no
// native binary, so `prisma generate` and `prisma migrate diff` work on machines that cannot
// download Prisma's engines. Migrations are applied by `rentbridge migrate` (src/db/migrate.ts).
import { PrismaPg } from '@prisma/adapter-pg';
import { defineConfig } from 'prisma/config';

export default defineConfig({
  experimental: { adapter: true },
  schema: 'prisma/schema.prisma',
  engine: 'js',
  adapter: async () =>
    new PrismaPg({
      connectionString: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres',
    }),
});
