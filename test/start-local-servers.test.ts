import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { answers } from '../src/dev/local-servers/ports.js';
import { runCli, spawnCli } from './support/cli.js';
import { freePort } from './support/free-port.js';

/**
 * `npm start` on the servers it starts itself: the embedded PostgreSQL (a free LOCAL_PG_PORT, so
 * nothing answers there) with the suite's broker, started from source as its own process.
 */
describe('rentbridge start without DATABASE_URL', () => {
  describe('when nothing answers on LOCAL_PG_PORT', () => {
    let dir: string;
    let child: ChildProcess;
    let log = '';
    let pgPort = 0;
    let base = '';

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'rentbridge-start-'));
      await chmod(dir, 0o755); // as root the server runs as `postgres`, which walks through it
      const [httpPort, sandboxPort] = [await freePort(), await freePort()];
      pgPort = await freePort();
      base = `http://127.0.0.1:${httpPort}`;
      child = spawnCli(
        ['start', '--demo'],
        {
          DATABASE_URL: undefined,
          LOCAL_PG_PORT: String(pgPort),
          LOCAL_PG_DIR: dir,
          KAFKA_BROKERS: inject('kafkaBrokers'),
          KAFKA_TOPIC_PREFIX: `t${randomBytes(4).toString('hex')}.`,
          HTTP_PORT: String(httpPort),
          SANDBOX_PORT: String(sandboxPort),
          PARTNER_API_URL: '',
          LOG_LEVEL: 'info',
        },
        (text) => (log += text),
      );
    });

    afterAll(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
      }
      await rm(dir, { recursive: true, force: true });
    });

    it('starts an embedded PostgreSQL, says so and where its data lives, and becomes ready', async () => {
      await vi.waitFor(async () => expect((await fetch(`${base}/readyz`)).status).toBe(200), {
        timeout: 90_000,
        interval: 500,
      });
      const lines = log.split('\n').filter((l) => l.includes('"component":"local-servers"'));
      // The first says what it is starting (Kafka's start can take a minute), the next what started.
      expect(lines[0]).toContain(`nothing answers on 127.0.0.1:${pgPort}: starting an embedded PostgreSQL`);
      const first = lines.find((l) => l.includes('started an embedded PostgreSQL'));
      expect(first).toContain(`"address":"127.0.0.1:${pgPort}"`);
      // Outside the project, the data folder is named by its absolute path.
      expect(first).toContain(`"dataDir":"${join(dir, 'data')}"`);
      expect(log).toContain('set DATABASE_URL and KAFKA_BROKERS');
    });

    it('refuses a second start while it runs, naming the busy ports (exit 2)', async () => {
      const second = await runCli(['start', '--demo'], {
        HTTP_PORT: new URL(base).port,
        SANDBOX_PORT: '0',
        DATABASE_URL: undefined,
        LOCAL_PG_PORT: String(pgPort),
        KAFKA_BROKERS: inject('kafkaBrokers'),
      });
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(`port ${new URL(base).port} (HTTP_PORT) already in use`);
    });

    it('stops on SIGTERM with exit 0, and stops the PostgreSQL it started', async () => {
      child.kill('SIGTERM');
      const code = await new Promise<number | null>((r) => child.once('exit', r));
      expect(code).toBe(0);
      expect(log).toContain('embedded PostgreSQL stopped');
      expect(await answers('127.0.0.1', pgPort)).toBe(false);
    });
  });

  // A PATH with bash (for kafka.sh) and, for the second case, a `java` but no `mvn`; KAFKA_DIR an
  // empty folder, so the jars are still to fetch.
  describe.each([
    {
      when: 'Java is not installed',
      tools: {},
      says: ['Java is not installed', 'openjdk-17-jre-headless'],
    },
    {
      when: 'Java is installed but Maven is not, and the jars are not fetched yet',
      tools: { java: '#!/bin/bash\nexit 0\n' },
      says: ['Maven', 'apt-get install maven'],
    },
  ])('when no Kafka answers and $when', ({ tools, says }) => {
    it('exits 2 naming what to install, or KAFKA_BROKERS', async () => {
      const bin = await mkdtemp(join(tmpdir(), 'rentbridge-path-'));
      const kafkaDir = await mkdtemp(join(tmpdir(), 'rentbridge-nojars-'));
      await symlink('/bin/bash', join(bin, 'bash'));
      for (const [name, script] of Object.entries(tools)) {
        await writeFile(join(bin, name), script, { mode: 0o755 });
      }
      try {
        const result = await runCli(['start', '--demo'], {
          PATH: bin,
          HTTP_PORT: String(await freePort()),
          SANDBOX_PORT: String(await freePort()),
          PARTNER_API_URL: '',
          DATABASE_URL: inject('databaseUrl'),
          KAFKA_BROKERS: undefined,
          KAFKA_DIR: kafkaDir,
          LOCAL_KAFKA_PORT: String(await freePort()),
          // Its controller's port too: by default the next one, which another test may hold (the
          // start then refuses that port before it looks for Java, which is what this case asks).
          KAFKA_CONTROLLER_PORT: String(await freePort()),
        });
        expect(result.code).toBe(2);
        for (const text of [...says, 'set KAFKA_BROKERS']) expect(result.stderr).toContain(text);
      } finally {
        await rm(bin, { recursive: true, force: true });
        await rm(kafkaDir, { recursive: true, force: true });
      }
    });
  });

  describe("when no Kafka answers and the local broker's controller port is taken", () => {
    it('exits 2 before starting anything, naming the port and KAFKA_CONTROLLER_PORT', async () => {
      const controller = createServer();
      const controllerPort = await freePort();
      await new Promise<void>((r) => controller.listen(controllerPort, '127.0.0.1', () => r()));
      const pgPort = await freePort();
      try {
        const result = await runCli(['start', '--demo'], {
          HTTP_PORT: String(await freePort()),
          SANDBOX_PORT: String(await freePort()),
          PARTNER_API_URL: '',
          DATABASE_URL: undefined,
          LOCAL_PG_PORT: String(pgPort),
          KAFKA_BROKERS: undefined,
          LOCAL_KAFKA_PORT: String(await freePort()),
          KAFKA_CONTROLLER_PORT: String(controllerPort),
        });
        expect(result.code).toBe(2);
        expect(result.stderr).toContain(
          `port ${controllerPort} (the local Kafka's controller, KAFKA_CONTROLLER_PORT)`,
        );
        expect(await answers('127.0.0.1', pgPort)).toBe(false);
      } finally {
        controller.close();
      }
    });
  });

  describe('when its HTTP and sandbox ports are taken', () => {
    const held: Server[] = [];
    afterAll(() => held.forEach((s) => s.close()));

    it('exits 2 before starting anything, naming both ports', async () => {
      const ports = [await freePort(), await freePort()];
      for (const port of ports) {
        const server = createServer();
        await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
        held.push(server);
      }
      const pgPort = await freePort();
      const result = await runCli(['start', '--demo'], {
        HTTP_PORT: String(ports[0]),
        SANDBOX_PORT: String(ports[1]),
        PARTNER_API_URL: '',
        DATABASE_URL: undefined,
        LOCAL_PG_PORT: String(pgPort),
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        `port ${ports[0]} (HTTP_PORT) and ${ports[1]} (SANDBOX_PORT) already in use`,
      );
      expect(await answers('127.0.0.1', pgPort)).toBe(false);
    });
  });
});
