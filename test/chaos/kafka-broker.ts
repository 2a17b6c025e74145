import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A Kafka broker of the chaos run's own (scripts/kafka.sh with its own directory and ports), so
 * stopping it does not disturb the shared broker on 9092.
 */
export interface KafkaBroker {
  brokers: string;
  start(): Promise<void>;
  /** Graceful stop (SIGTERM, as an orchestrator would). */
  stop(): Promise<void>;
  pid(): number | null;
}

export function createKafkaBroker(options: {
  repoRoot: string;
  dir: string;
  port: number;
  controllerPort: number;
}): KafkaBroker {
  mkdirSync(options.dir, { recursive: true });
  // Reuse the jars the shared broker already fetched instead of downloading them again.
  const sharedJars = join(options.repoRoot, '.kafka', 'jars');
  const jars = join(options.dir, 'jars');
  if (!existsSync(jars) && existsSync(join(sharedJars, '.complete'))) symlinkSync(sharedJars, jars);
  const env = {
    ...process.env,
    KAFKA_DIR: options.dir,
    KAFKA_PORT: String(options.port),
    KAFKA_CONTROLLER_PORT: String(options.controllerPort),
    KAFKA_HEAP: '-Xms256m -Xmx768m',
  };
  const script = join(options.repoRoot, 'scripts', 'kafka.sh');
  const pidFile = join(options.dir, 'kafka.pid');
  return {
    brokers: `127.0.0.1:${options.port}`,
    async start() {
      await run('bash', [script, 'start'], { env, timeout: 240_000 });
    },
    async stop() {
      await run('bash', [script, 'stop'], { env, timeout: 90_000 });
    },
    pid() {
      if (!existsSync(pidFile)) return null;
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      try {
        process.kill(pid, 0);
        return pid;
      } catch {
        return null;
      }
    },
  };
}
