import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A PostgreSQL cluster of the chaos run's own, in a temporary directory, so it can be crashed
 * and restarted without touching the shared server on 5432 that other tests use.
 */
export interface PostgresCluster {
  url: string;
  /** Crash (`-m immediate`: no checkpoint, like a power cut), wait `downMs`, start again. */
  crashRestart(downMs: number): Promise<{ downAt: number; upAt: number }>;
  stop(): Promise<void>;
  /** The postmaster's pid while it runs, else null. */
  pid(): number | null;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const version = versions[0];
  if (!version) throw new Error(`no PostgreSQL server binaries under ${root}`);
  return join(root, version, 'bin');
}

export async function startPostgresCluster(options: { dir: string; port: number }): Promise<PostgresCluster> {
  const bin = binDir();
  const data = join(options.dir, 'pg');
  const log = join(options.dir, 'pg.log');
  mkdirSync(options.dir, { recursive: true });
  // initdb and the server refuse to run as root: run them as the `postgres` OS user then.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(options.dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const pgExec = (tool: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], { timeout: 120_000 })
      : run(join(bin, tool), args, { timeout: 120_000 });

  await pgExec('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const serverOptions = [
    `-p ${options.port}`,
    `-k ${options.dir}`,
    '-c listen_addresses=127.0.0.1',
    '-c max_connections=200',
    '-c fsync=on',
  ].join(' ');
  const start = () =>
    pgExec('pg_ctl', ['-D', data, '-o', serverOptions, '-l', log, '-w', '-t', '60', 'start']);
  const stop = (mode: 'fast' | 'immediate') =>
    pgExec('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']).catch(() => undefined);
  await start();

  const pidFile = join(data, 'postmaster.pid');
  return {
    url: `postgresql://postgres@127.0.0.1:${options.port}/postgres`,
    async crashRestart(downMs) {
      const downAt = Date.now();
      await stop('immediate');
      await new Promise((r) => setTimeout(r, downMs));
      await start();
      return { downAt, upAt: Date.now() };
    },
    async stop() {
      await stop('fast');
    },
    pid() {
      if (!existsSync(pidFile)) return null;
      try {
        const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
        process.kill(pid, 0);
        return pid;
      } catch {
        return null;
      }
    },
  };
}
