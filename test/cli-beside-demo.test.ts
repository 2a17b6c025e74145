import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/dev/sandbox/index.js';
import { runCli } from './support/cli.js';
import { useTestDatabase } from './support/db.js';
import { freePort } from './support/free-port.js';

/**
 * The one-off commands that need the Partner API, run beside `npm start` (issue 54): with
 * PARTNER_API_URL unset they find the demo's embedded sandbox at SANDBOX_PORT, as `dlq` and `trace`
 * find its database; their logs go to stderr, so `--format json` on stdout parses; with no sandbox
 * there, a usage error (exit 2) that is never stored as a failed run.
 */
describe('reconcile, resync and probe beside a running demo', () => {
  const database = useTestDatabase();
  let sandbox: Sandbox;
  const dir = mkdtempSync(join(tmpdir(), 'rb-beside-'));

  beforeAll(async () => {
    // The demo's sandbox stands at SANDBOX_PORT while `npm start` runs.
    sandbox = await startSandbox({ port: await freePort() });
  });
  afterAll(async () => {
    await sandbox?.close();
  });

  const env = (sandboxPort: number) => ({
    DATABASE_URL: database.url,
    KAFKA_BROKERS: inject('kafkaBrokers'),
    KAFKA_TOPIC_PREFIX: `${database.schema}.`,
    PARTNER_API_URL: '',
    SANDBOX_PORT: String(sandboxPort),
    // As a person at a terminal would run it: LOG_LEVEL unset.
    LOG_LEVEL: '',
  });
  const port = () => Number(new URL(sandbox.url).port);

  it('reconcile finds the sandbox, prints clean JSON on stdout and says where it looked on stderr', async () => {
    const result = await runCli(['reconcile', '--format', 'json'], env(port()), 120_000);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ drift: false, items: [] });
    expect(result.stderr).toContain(
      `using the running demo's embedded sandbox at http://127.0.0.1:${port()}`,
    );
    expect(result.stderr).not.toMatch(/^\{/m);
  }, 150_000);

  it('reconcile with no sandbox there is a usage error (exit 2), stored as no run', async () => {
    const before = await database.sql.query<{ n: string }>('SELECT count(*) AS n FROM reconciliation_runs');
    const result = await runCli(['reconcile'], env(await freePort()), 120_000);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/PARTNER_API_URL is not set, and no `npm start` demo's sandbox answers/);
    expect(result.stdout).toBe('');
    const after = await database.sql.query<{ n: string }>('SELECT count(*) AS n FROM reconciliation_runs');
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
  }, 150_000);

  it('resync finds the sandbox and prints its table', async () => {
    const result = await runCli(['resync', '--resource', 'roles'], env(port()), 120_000);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^resource\s+records\s+pages/);
    expect(result.stdout).toMatch(/^roles\s+\d+/m);
    expect(result.stderr).toContain("using the running demo's embedded sandbox");
  }, 150_000);

  it('probe finds the sandbox and writes its report', async () => {
    const out = join(dir, 'probe.json');
    const result = await runCli(['probe', '--out', out], env(port()), 120_000);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("using the running demo's embedded sandbox");
    expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ guard_assumptions_hold: true });
  }, 150_000);
});
