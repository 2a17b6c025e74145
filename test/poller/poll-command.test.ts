import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandboxControl, startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const run = promisify(execFile);

/** Runs the CLI from source, as `rentbridge ...`. */
async function rentbridge(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      env: { ...process.env, LOG_LEVEL: 'silent', ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('rentbridge poll --once', () => {
  let database: TestDatabase;
  let sandbox: Sandbox;
  beforeAll(async () => {
    database = await createTestDatabase();
    sandbox = await startSandbox({ port: 0 });
  });
  afterAll(async () => {
    await sandbox.close();
    await database.drop();
  });

  describe('when the resource is unknown', () => {
    it('exits 2 naming the valid resources', async () => {
      const result = await rentbridge(['poll', '--once', '--resource', 'apps'], {
        DATABASE_URL: database.url,
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('unknown resource "apps"');
      expect(result.stderr).toContain('applications, application_activity_logs');
    });
  });

  describe('when one resource is asked for', () => {
    it('polls it once, prints a summary and exits 0', async () => {
      await createSandboxControl(sandbox.url).addRecords('applications', [
        { status: 'open' },
        { status: 'open' },
      ]);
      const result = await rentbridge(['poll', '--once', '--resource', 'applications'], {
        DATABASE_URL: database.url,
        PARTNER_API_URL: sandbox.url,
      });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^resource\s+outcome\s+pages\s+records\s+changes/);
      expect(result.stdout).toMatch(/applications\s+completed\s+1\s+2\s+2\s+0\s+1/);
      expect(await database.db.outboxMessage.count({ where: { topic: 'partner.applications' } })).toBe(2);
    });
  });
});
