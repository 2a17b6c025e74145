import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../support/cli.js';

describe('rentbridge sandbox', () => {
  describe('when started with --port 0 --seed demo', () => {
    it('DESIGN sandbox: needs no configuration, logs its URL and keys, serves the API and stops on SIGTERM', async () => {
      // No DATABASE_URL or KAFKA_BROKERS: the sandbox stands alone.
      const env = { ...process.env, LOG_LEVEL: 'info', DATABASE_URL: '', KAFKA_BROKERS: '' };
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', 'sandbox', '--port', '0', '--seed', 'demo'],
        {
          cwd: ROOT,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      try {
        const url = await new Promise<string>((resolve, reject) => {
          let out = '';
          child.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            const match =
              /sandbox listening on (http:\/\/[^\s]+) \(keys: sandbox-access-key \/ sandbox-secret-key/.exec(
                out,
              );
            if (match?.[1]) resolve(match[1]);
          });
          child.on('close', () => reject(new Error(`exited before listening: ${out}`)));
        });
        const auth = await fetch(`${url}/partner/v1/authenticate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ access_key: 'sandbox-access-key', secret_key: 'sandbox-secret-key' }),
        });
        const { token } = (await auth.json()) as { token: string };
        const list = await fetch(`${url}/partner/v1/applications`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(((await list.json()) as { total_count: number }).total_count).toBeGreaterThan(0);
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).toBe(0);
    });
  });

  describe('when given an unknown data set', () => {
    it('DESIGN sandbox: exits 2 naming it', async () => {
      const result = await runCli(['sandbox', '--port', '0', '--seed', 'huge']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('huge');
    });
  });
});
