import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { freePort } from '../support/free-port.js';
import { rentbridgeOnce, runRentbridge, type Running } from '../upgrade/processes.js';

/**
 * `npm run test:smoke`: each role as its own process on this Node (CI runs it on the second
 * supported line, decision 059): migrated schema, topics, then `receiver`, `relay`, `poller`,
 * `consumer rental-payments`, `consumer dead-letters` and `callbacks run` each start, answer
 * /readyz 200, and stop with exit 0 on SIGTERM. Exits 1 naming each role that did not.
 */
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const logDir = join(repoRoot, 'test-artifacts', 'smoke');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ROLES = [
  ['receiver'],
  ['relay'],
  ['poller'],
  ['consumer', 'rental-payments'],
  ['consumer', 'dead-letters'],
  ['callbacks', 'run'],
];

async function readyWithin(url: string, ms: number, proc: Running): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && proc.child.exitCode === null) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(3000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return true;
    await sleep(250);
  }
  return false;
}

async function main(): Promise<number> {
  const suffix = randomBytes(4).toString('hex');
  const schema = `smoke_${suffix}`;
  const prefix = `smoke-${suffix}.`;
  const server = (process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres').split('?')[0]!;
  const brokers = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
  const sandboxPort = await freePort();
  const env: Record<string, string> = {
    DATABASE_URL: `${server}?schema=${schema}`,
    KAFKA_BROKERS: brokers,
    KAFKA_TOPIC_PREFIX: prefix,
    PARTNER_API_URL: `http://127.0.0.1:${sandboxPort}`,
    PARTNER_ACCESS_KEY: 'sandbox-access-key',
    PARTNER_SECRET_KEY: 'sandbox-secret-key',
    PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [`whsec_${randomBytes(24).toString('base64')}`] }),
    PMS_CALLBACKS: JSON.stringify({
      acme: { url: 'http://127.0.0.1:9/callbacks', secrets: [`whsec_${randomBytes(24).toString('base64')}`] },
    }),
  };
  const failed: string[] = [];
  const sandbox = runRentbridge('sandbox', repoRoot, ['sandbox', '--port', String(sandboxPort)], {}, logDir);
  try {
    await rentbridgeOnce(repoRoot, ['migrate'], env, logDir);
    await rentbridgeOnce(repoRoot, ['topics'], env, logDir);
    for (const args of ROLES) {
      const name = args.join(' ');
      const port = await freePort();
      const began = Date.now();
      const proc = runRentbridge(args.join('-'), repoRoot, args, { ...env, HTTP_PORT: String(port) }, logDir);
      const ready = await readyWithin(`http://127.0.0.1:${port}/readyz`, 90_000, proc);
      proc.child.kill('SIGTERM');
      const code = await Promise.race([proc.exited, sleep(30_000).then(() => 'no exit')]);
      if (code === 'no exit') proc.child.kill('SIGKILL');
      console.log(
        `  ${name}: ${ready ? `ready in ${((Date.now() - began) / 1000).toFixed(1)} s` : 'NOT READY'}, stop: exit ${code}`,
      );
      if (!ready || code !== 0) failed.push(name);
    }
  } finally {
    sandbox.child.kill('SIGTERM');
    await Promise.race([sandbox.exited, sleep(10_000)]);
    const pool = new pg.Pool({ connectionString: server, max: 1 });
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await pool.end();
    const admin = new Kafka({
      clientId: 'smoke-cleanup',
      brokers: [brokers],
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    await admin.disconnect();
  }
  console.log(
    `roles smoke on Node ${process.versions.node}: ${failed.length === 0 ? 'every role ready and stopped' : `FAILED: ${failed.join(', ')} (logs: ${logDir})`}`,
  );
  return failed.length === 0 ? 0 : 1;
}

process.exit(await main());
