/**
 * The set-up the Partner API benches share (resync, reconcile): a schema of their own, migrated;
 * a sandbox over HTTP; a fetch that counts the Partner API requests (the sandbox's control API
 * and token requests apart); a Partner client on the shared rate budget in PostgreSQL at the
 * sandbox's own limit (650/min). Everything is dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { createDb, type Db } from '../src/db/prisma.js';
import { createLogger, type Logger } from '../src/logger.js';
import { createPartnerClient, createRateBudget, type PartnerClient } from '../src/partner/index.js';
import { startSandbox } from '../src/dev/sandbox/index.js';
import { createSandboxControl, type SandboxControl } from '../src/dev/sandbox/control-client.js';
import { databaseBase } from './env.js';

export interface SandboxBench {
  db: Db;
  logger: Logger;
  sandboxUrl: string;
  control: SandboxControl;
  /** Partner API requests made through `partner` so far. */
  requests(): number;
  /** A client on the shared budget at 650/min; `wrap` sees its counting fetch (a per-resource counter). */
  partner(wrap?: (fetch: typeof globalThis.fetch) => typeof globalThis.fetch): PartnerClient;
}

export async function withSandboxBench<T>(
  name: string,
  body: (bench: SandboxBench) => Promise<T>,
): Promise<T> {
  const base = databaseBase();
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
  const schema = `bench_${name}_${randomBytes(4).toString('hex')}`;
  const url = withSchema(base, schema);
  await migrate(url);
  const db = createDb(url, { max: 5 });
  const sandbox = await startSandbox({ port: 0 });
  let requests = 0;
  const countingFetch: typeof fetch = async (input, init) => {
    const u = new URL(input instanceof Request ? input.url : String(input));
    if (!u.pathname.startsWith('/__sandbox') && !u.pathname.endsWith('/authenticate')) requests += 1;
    return fetch(input, init);
  };
  try {
    return await body({
      db,
      logger,
      sandboxUrl: sandbox.url,
      control: createSandboxControl(sandbox.url),
      requests: () => requests,
      partner: (wrap = (f) => f) =>
        createPartnerClient({
          baseUrl: sandbox.url,
          accessKey: 'sandbox-access-key',
          secretKey: 'sandbox-secret-key',
          logger,
          budget: createRateBudget({ db, limitPerMinute: 650, logger }),
          fetch: wrap(countingFetch),
        }),
    });
  } finally {
    await sandbox.close();
    await db.$disconnect();
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}
