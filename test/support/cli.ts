import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { withSchema } from '../../src/db/database-url.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `rentbridge <args>` from source (tsx) as its own process. */
export function runCli(args: string[], env: Record<string, string | undefined> = {}, timeoutMs = 60_000) {
  return new Promise<CliResult>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`rentbridge ${args.join(' ')} timed out\n${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Stops processes a test started: SIGTERM, then SIGKILL after `graceMs`; resolves once all exited. */
export async function stopProcesses(children: Iterable<ChildProcess>, graceMs = 20_000): Promise<void> {
  await Promise.all(
    [...children].map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/**
 * Starts `rentbridge <args>` from source (tsx) as a long-running process of the test: `env` over
 * the test's own environment; all it prints (stdout and stderr) is passed to `onOutput`.
 */
export function spawnCli(
  args: string[],
  env: Record<string, string | undefined>,
  onOutput: (text: string) => void,
): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => onOutput(d.toString()));
  child.stderr!.on('data', (d: Buffer) => onOutput(d.toString()));
  return child;
}

/** The environment that puts a rentbridge process on a test's database schema and topics. */
export function storesEnv(
  database: { url: string },
  kafka: { brokers: string[]; prefix: string },
): Record<string, string> {
  return {
    DATABASE_URL: database.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    KAFKA_TOPIC_PREFIX: kafka.prefix,
  };
}

/**
 * The environment of `rentbridge start` (the demo) on its own `schema` of the test server and
 * topics `<schema>.`, serving on `httpPort`, its sandbox on `sandboxPort` as the Partner API, no
 * ops token.
 */
export function demoEnv(schema: string, httpPort: number, sandboxPort: number): Record<string, string> {
  return {
    DATABASE_URL: withSchema(inject('databaseUrl'), schema),
    KAFKA_BROKERS: inject('kafkaBrokers'),
    KAFKA_TOPIC_PREFIX: `${schema}.`,
    HTTP_PORT: String(httpPort),
    SANDBOX_PORT: String(sandboxPort),
    OPS_TOKEN: '',
    PARTNER_API_URL: '',
  };
}
