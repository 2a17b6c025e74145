import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';
import { createKafkaBroker, type KafkaBroker } from '../chaos/kafka-broker.js';
import { ROOT, spawnCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { freePort } from '../support/free-port.js';

/**
 * A consumer started (or restarted, as an orchestrator does) while Kafka is down: it does not exit;
 * it waits for the broker with back-off, says so in its log and on /readyz (not ready, /healthz
 * alive), and joins its group once the broker answers. Against a broker of the test's own
 * (scripts/kafka.sh on ports of its own, data under /tmp), so the shared broker is never stopped.
 */
describe('a consumer started while Kafka is down', () => {
  let database: TestDatabase;
  let sandbox: Sandbox;
  let broker: KafkaBroker;
  let brokerDir: string;
  let child: ChildProcess | undefined;
  let log = '';
  let port: number;

  beforeAll(async () => {
    database = await createTestDatabase();
    sandbox = await startSandbox({ port: 0 });
    brokerDir = mkdtempSync(join(tmpdir(), 'rentbridge-outage-kafka-'));
    broker = createKafkaBroker({
      repoRoot: ROOT,
      dir: brokerDir,
      port: await freePort(),
      controllerPort: await freePort(),
    });
    port = await freePort();
  }, 60_000);

  afterAll(async () => {
    child?.kill('SIGKILL');
    await broker?.stop().catch(() => undefined);
    if (brokerDir) rmSync(brokerDir, { recursive: true, force: true });
    await sandbox?.close();
    await database?.drop();
  }, 120_000);

  it('waits and retries, not ready meanwhile, and consumes once the broker answers', async () => {
    child = spawnCli(
      ['consumer', 'rental-payments'],
      {
        DATABASE_URL: database.url,
        KAFKA_BROKERS: broker.brokers,
        KAFKA_TOPIC_PREFIX: `t${randomBytes(4).toString('hex')}.`,
        KAFKA_SESSION_TIMEOUT_MS: '10000',
        PARTNER_API_URL: sandbox.url,
        HTTP_PORT: String(port),
        LOG_LEVEL: 'info',
      },
      (text) => (log += text),
    );
    const readyz = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      return { status: res.status, body: await res.text() };
    };

    // No broker: alive, not ready, a clear warning, and still running after several attempts.
    await vi.waitFor(
      async () => {
        expect(child!.exitCode, log).toBeNull();
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
        expect(log).toContain('Kafka does not answer: the role waits and tries again');
      },
      { timeout: 90_000, interval: 500 },
    );
    expect((await readyz()).status).toBe(503);
    await vi.waitFor(
      () => expect(log.match(/Kafka does not answer/g)?.length ?? 0).toBeGreaterThanOrEqual(2),
      {
        timeout: 90_000,
        interval: 500,
      },
    );
    expect(child.exitCode, log).toBeNull();
    expect((await readyz()).status).toBe(503);

    // The broker comes: the consumer makes its topics, joins its group and is ready.
    await broker.start();
    await vi.waitFor(
      async () => {
        expect(child!.exitCode, log).toBeNull();
        const r = await readyz();
        expect(r.status, r.body).toBe(200);
      },
      { timeout: 120_000, interval: 1000 },
    );
    expect(log).toContain('Kafka answers: role started');
    expect(log).toContain('consumer started');
  }, 360_000);
});
