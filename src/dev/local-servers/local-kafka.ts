import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../logger.js';
import { UsageError } from '../../errors.js';

/**
 * The Apache Kafka broker of scripts/kafka.sh (KRaft, one node, jars from Maven Central, fetched
 * once), started and stopped through the script so that `npm start`, `npm test` and
 * `npm run kafka:start` share one broker and one folder (`.kafka/`, or KAFKA_DIR as the script reads it).
 */

export interface LocalKafkaOptions {
  /** The project's folder: scripts/kafka.sh is there. */
  root: string;
  /** The broker's folder (jars, data, pid, log): KAFKA_DIR, as scripts/kafka.sh reads it; default `.kafka/`. */
  dir: string;
  port: number;
  controllerPort: number;
  logger: Logger;
}

export interface LocalKafka {
  readonly brokers: string;
  readonly dataDir: string;
  readonly log: string;
  /** SIGTERM (a controlled shutdown), waited for; SIGKILL past the script's bound. */
  stop(): Promise<void>;
  /** SIGTERM without waiting (a process that exits now): the broker finishes its shutdown alone. */
  kill(): void;
}

const has = (command: string, args: string[]) => !spawnSync(command, args, { stdio: 'ignore' }).error;

function script(
  options: LocalKafkaOptions,
  command: 'start' | 'stop',
  spawned: (pid: number) => void = () => undefined,
): Promise<void> {
  const logger = options.logger.child({ component: 'local-kafka' });
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(options.root, 'scripts', 'kafka.sh'), command], {
      cwd: options.root,
      env: {
        ...process.env,
        KAFKA_DIR: options.dir,
        KAFKA_HOST: '127.0.0.1',
        KAFKA_PORT: String(options.port),
        KAFKA_CONTROLLER_PORT: String(options.controllerPort),
      },
      // Its own process group, and so the broker's: Ctrl-C in a terminal reaches rentbridge only.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (child.pid) spawned(child.pid);
    const lines: string[] = [];
    const onData = (d: Buffer) => {
      for (const line of d.toString().split('\n').filter(Boolean)) {
        lines.push(line);
        // The script's own progress ("fetching Apache Kafka jars...", "broker ready after 6s").
        if (line.startsWith('kafka.sh: ')) logger.info({ script: 'scripts/kafka.sh' }, line.slice(10));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new UsageError(
              `scripts/kafka.sh ${command} failed (exit ${code}); set KAFKA_BROKERS to use another broker:\n${lines.slice(-20).join('\n')}`,
            ),
          ),
    );
  });
}

export async function startLocalKafka(options: LocalKafkaOptions): Promise<LocalKafka> {
  const kafkaDir = options.dir;
  const where = `127.0.0.1:${options.port}`;
  if (!has('java', ['-version'])) {
    throw new UsageError(
      `KAFKA_BROKERS is unset and nothing answers on ${where}, and Java is not installed to start a broker: install Java 17 or later (Debian/Ubuntu: apt-get install openjdk-17-jre-headless), or set KAFKA_BROKERS to your broker`,
    );
  }
  if (!existsSync(join(kafkaDir, 'jars', '.complete')) && !has('mvn', ['-v'])) {
    throw new UsageError(
      `KAFKA_BROKERS is unset and nothing answers on ${where}; Kafka's jars are fetched once from Maven Central with Maven, which is not installed: install it (Debian/Ubuntu: apt-get install maven), or set KAFKA_BROKERS to your broker`,
    );
  }
  const pidFile = join(kafkaDir, 'kafka.pid');
  // The start script's process group holds the script, Maven while it fetches the jars and the
  // broker it starts (nohup keeps the group). A process that exits without stop() (a second
  // Ctrl-C, a signal during start-up, a fatal error) sends the group SIGTERM: whatever of it still
  // runs stops, the broker by a controlled shutdown it finishes alone.
  let group = 0;
  const began = Date.now();
  const kill = () => {
    // Only a pid file this start wrote: a stale one may name another process by now.
    const fresh = existsSync(pidFile) && statSync(pidFile).mtimeMs >= began - 1000;
    const pid = fresh ? Number(readFileSync(pidFile, 'utf8').trim()) : 0;
    for (const target of [group > 0 ? -group : 0, pid]) {
      if (target === 0) continue;
      try {
        process.kill(target, 'SIGTERM');
      } catch {
        // Already gone.
      }
    }
  };
  process.once('exit', kill);
  try {
    await script(options, 'start', (pid) => (group = pid));
  } catch (error) {
    process.removeListener('exit', kill);
    throw error;
  }
  return {
    brokers: where,
    dataDir: join(kafkaDir, 'data'),
    log: join(kafkaDir, 'kafka.log'),
    stop: () => {
      process.removeListener('exit', kill);
      return script(options, 'stop');
    },
    kill,
  };
}
