import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';

export interface Running {
  name: string;
  child: ChildProcess;
  exited: Promise<number | null>;
}

/**
 * `rentbridge <args>` from a checkout's source (`node --import tsx src/cli/main.ts`), with the
 * environment given and nothing inherited that could change its mode (a PARTNER_API_URL always
 * given: neither version's `start` runs its demo). Output goes to test-artifacts/upgrade/<name>.log.
 */
export function runRentbridge(
  name: string,
  dir: string,
  args: string[],
  env: Record<string, string>,
  logDir: string,
): Running {
  mkdirSync(logDir, { recursive: true });
  const out = createWriteStream(join(logDir, `${name}.log`), { flags: 'a' });
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { name, child, exited };
}

/** Runs `rentbridge <args>` to its end; its stdout, or an error naming its output. */
export async function rentbridgeOnce(
  dir: string,
  args: string[],
  env: Record<string, string>,
  logDir: string,
): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  mkdirSync(logDir, { recursive: true });
  if (code !== 0) throw new Error(`rentbridge ${args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`);
  return stdout;
}
