import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';

describe('every role on an unmigrated database', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => {
    await database?.drop();
  });

  for (const args of [
    ['consumer', 'rental-payments'],
    ['consumer', 'application-decisions'],
    ['consumer', 'dead-letters'],
    ['relay'],
    ['receiver'],
    ['poller'],
  ]) {
    describe(`when \`rentbridge ${args.join(' ')}\` starts`, () => {
      it('stops with exit 2 naming `rentbridge migrate`, before saying it started', async () => {
        const result = await runCli(args, {
          DATABASE_URL: database.url,
          PARTNER_API_URL: 'http://127.0.0.1:9',
          KAFKA_BROKERS: '127.0.0.1:9',
        });
        expect(result.code).toBe(2);
        expect(result.stderr).toMatch(/migration\(s\) pending .*run `rentbridge migrate` first/);
        expect(result.stdout).not.toMatch(/started/);
      });
    });
  }
});
