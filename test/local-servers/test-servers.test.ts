import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { TestProject } from 'vitest/node';
import { answers } from '../../src/dev/local-servers/ports.js';
import { freePort } from '../support/free-port.js';
import setup from '../support/global-setup.js';

/**
 * `npm test` on a machine with Node and Java only: no DATABASE_URL, no Docker engine for
 * Testcontainers, nothing on LOCAL_PG_PORT (a free port stands in for 5432, which answers here).
 * The suite's global setup starts the embedded PostgreSQL of `npm start` and stops it after the run.
 */
describe('the servers npm test runs against', () => {
  const saved: Record<string, string | undefined> = {};
  const set = (name: string, value: string | undefined) => {
    if (!(name in saved)) saved[name] = process.env[name];
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  };
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rentbridge-test-pg-'));
    await chmod(dir, 0o755); // as root the server runs as `postgres`, which walks through it
  });
  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) set(name, value);
    await rm(dir, { recursive: true, force: true });
  });

  describe('when no DATABASE_URL is set, no Docker engine answers and nothing answers on LOCAL_PG_PORT', () => {
    it('are an embedded PostgreSQL, stopped after the run', async () => {
      const port = await freePort();
      set('DATABASE_URL', undefined);
      set('KAFKA_BROKERS', inject('kafkaBrokers'));
      set('LOCAL_PG_PORT', String(port));
      set('LOCAL_PG_DIR', dir);
      const provided: Record<string, string> = {};
      const project = { provide: (key: string, value: string) => (provided[key] = value) };
      const teardown = await setup(project as unknown as TestProject);
      try {
        expect(provided.databaseUrl).toBe(`postgresql://postgres@127.0.0.1:${port}/postgres`);
        expect(provided.kafkaBrokers).toBe(inject('kafkaBrokers'));
        const client = new pg.Client({ connectionString: provided.databaseUrl });
        await client.connect();
        const { rows } = await client.query<{ v: string }>('SELECT current_setting($$server_version$$) AS v');
        await client.end();
        expect(rows[0]!.v).toMatch(/^16\./);
      } finally {
        await teardown();
      }
      expect(await answers('127.0.0.1', port)).toBe(false);
    });
  });
});
