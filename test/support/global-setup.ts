import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/dev/local-servers/embedded-postgres.js';
import { postgresPaths } from '../../src/dev/local-servers/local-servers.js';
import { answers } from '../../src/dev/local-servers/ports.js';
import { projectRoot } from '../../src/dev/local-servers/project-root.js';

/**
 * Finds the servers the tests run against, in the order the README gives:
 * 1. DATABASE_URL / KAFKA_BROKERS when set;
 * 2. Testcontainers, where a Docker engine answers;
 * 3. what answers on 127.0.0.1:LOCAL_PG_PORT (5432) and 127.0.0.1:LOCAL_KAFKA_PORT (9092), else
 *    the embedded PostgreSQL of `npm start` (same folder, `.postgres/`, stopped after the run) and
 *    a Kafka broker from scripts/kafka.sh (left running, as `npm run kafka:start` would).
 */

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    kafkaBrokers: string;
  }
}

const run = promisify(execFile);
const stops: Array<() => Promise<unknown>> = [];

async function fromContainers(): Promise<{ databaseUrl?: string; kafkaBrokers?: string } | null> {
  try {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const { KafkaContainer } = await import('@testcontainers/kafka');
    const pg = await new PostgreSqlContainer('postgres:16-alpine').start();
    stops.push(() => pg.stop());
    const kafka = await new KafkaContainer('confluentinc/cp-kafka:7.7.1').withKraft().start();
    stops.push(() => kafka.stop());
    return {
      databaseUrl: pg.getConnectionUri(),
      kafkaBrokers: `${kafka.getHost()}:${kafka.getMappedPort(9093)}`,
    };
  } catch (error) {
    const message = (error as Error).message;
    if (message.includes('container runtime strategy')) return null;
    throw error;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let databaseUrl = process.env.DATABASE_URL;
  let kafkaBrokers = process.env.KAFKA_BROKERS;
  if (!databaseUrl || !kafkaBrokers) {
    const containers = process.env.TESTCONTAINERS === 'off' ? null : await fromContainers();
    if (containers) {
      console.log('test servers: Testcontainers');
      databaseUrl ??= containers.databaseUrl;
      kafkaBrokers ??= containers.kafkaBrokers;
    } else {
      const pgPort = Number(process.env.LOCAL_PG_PORT || 5432);
      const kafkaPort = Number(process.env.LOCAL_KAFKA_PORT || 9092);
      if (!databaseUrl) {
        if (await answers('127.0.0.1', pgPort)) {
          console.log(`test servers: PostgreSQL on 127.0.0.1:${pgPort}`);
          databaseUrl = `postgresql://postgres@127.0.0.1:${pgPort}/postgres`;
        } else {
          const dir = process.env.LOCAL_PG_DIR || join(projectRoot(), '.postgres');
          const pg = await startEmbeddedPostgres({ ...postgresPaths(dir), port: pgPort });
          stops.push(() => pg.stop());
          console.log(`test servers: embedded PostgreSQL on 127.0.0.1:${pgPort} (data in ${dir})`);
          databaseUrl = pg.url;
        }
      }
      if (!kafkaBrokers) {
        if (!(await answers('127.0.0.1', kafkaPort))) {
          console.log(`test servers: starting Kafka on 127.0.0.1:${kafkaPort} (scripts/kafka.sh)`);
          await run('bash', ['scripts/kafka.sh', 'start'], {
            timeout: 180_000,
            env: {
              ...process.env,
              KAFKA_PORT: String(kafkaPort),
              KAFKA_CONTROLLER_PORT: process.env.KAFKA_CONTROLLER_PORT ?? String(kafkaPort + 1),
            },
          });
        }
        kafkaBrokers = `127.0.0.1:${kafkaPort}`;
      }
    }
  }
  project.provide('databaseUrl', databaseUrl!);
  project.provide('kafkaBrokers', kafkaBrokers!);
  return async () => {
    for (const stop of stops.reverse()) await stop();
  };
}
