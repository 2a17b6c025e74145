import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';

/**
 * Finds the servers the tests run against, in the order the README gives:
 * 1. DATABASE_URL / KAFKA_BROKERS when set;
 * 2. Testcontainers, where a Docker engine answers;
 * 3. PostgreSQL on 127.0.0.1:5432 and a Kafka broker from scripts/kafka.sh.
 */

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    kafkaBrokers: string;
  }
}

const run = promisify(execFile);
const stops: Array<() => Promise<unknown>> = [];

function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1000 }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

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
      console.log('test servers: no container runtime; using local PostgreSQL and scripts/kafka.sh');
      databaseUrl ??= 'postgresql://postgres@127.0.0.1:5432/postgres';
      if (!kafkaBrokers) {
        if (!(await answers('127.0.0.1', 9092))) {
          await run('bash', ['scripts/kafka.sh', 'start'], { timeout: 180_000 });
        }
        kafkaBrokers = '127.0.0.1:9092';
      }
    }
  }
  project.provide('databaseUrl', databaseUrl!);
  project.provide('kafkaBrokers', kafkaBrokers!);
  return async () => {
    for (const stop of stops.reverse()) await stop();
  };
}
