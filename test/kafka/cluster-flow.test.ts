import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { randomBytes } from 'node:crypto';
import { createWriteStream, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSandboxControl, startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { ROOT } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { freePort } from '../support/free-port.js';
import { buildRentPayment, buildSecret, send } from '../receiver/webhooks.js';
import { flowFigures, formatFigures, type FlowRecord } from './cluster-flow-figures.js';

/**
 * Issue 53, measured through public interfaces on the three-broker cluster of `scripts/kafka.sh
 * cluster` (replication 3, min.insync.replicas 2): signed webhooks at a steady rate go through
 * rentbridge's own processes (receiver, relay, the rental-payments consumer, the callbacks role)
 * while one broker is killed and revived, then two. Printed (figures, not asserted as timings):
 * the longest gap between outcomes and webhook → outcome p50/p99 with one broker down; after two,
 * the time to the first command on Kafka, to every /readyz 200, to the last outcome of the
 * commands acknowledged during the outage; and how many commands and outcomes were published more
 * than once. Asserted: nothing acknowledged is lost, each payment is applied once.
 *
 * Times are the broker's: a message's CreateTime is stamped by kafkajs when it encodes the
 * request that was written (a retried request is encoded again), so a send held up by the outage
 * shows its delay; the topics are read whole once the cluster is back, by a reader of the test's.
 * Runs by `npm run test:cluster` (RENTBRIDGE_CLUSTER_BROKERS); FLOW_FIGURES_OUT=<file> also writes
 * the figures as JSON. FLOW_RATE (webhooks a second, default 2: a rental payment costs the guard a
 * few Partner API calls, and 650 a minute is the budget) and FLOW_DOWN_SECONDS (default 30) size it.
 * FLOW_BEFORE_ROOT=<checkout> runs that checkout's processes beside this one's, on their own
 * database schema, topics and sandbox, under the same load and the same kills: a before/after
 * measured in one run, as a loaded machine gives no two runs alike.
 */
const BROKERS = (process.env.RENTBRIDGE_CLUSTER_BROKERS ?? '').split(',').filter(Boolean);
const SCRIPT = `${ROOT}scripts/kafka.sh`;
const run$ = promisify(execFile);
const RATE = Number(process.env.FLOW_RATE ?? 2);
const DOWN_MS = Number(process.env.FLOW_DOWN_SECONDS ?? 30) * 1000;
const STEADY_MS = 15_000;
const ENROLLMENTS = 12;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function answers(address: string): Promise<boolean> {
  const [host, port] = address.split(':');
  return new Promise((resolve) => {
    const socket = connect({ host: host!, port: Number(port), timeout: 500 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

const cluster = (...args: string[]) => run$('bash', [SCRIPT, 'cluster', ...args], { timeout: 600_000 });

/** One build of rentbridge under test: its processes, database, sandbox and what it was seen doing. */
interface System {
  label: string;
  root: string;
  database: TestDatabase;
  sandbox: Sandbox;
  prefix: string;
  receiverPort: number;
  enrollments: number[];
  children: Array<{ name: string; child: ChildProcess; port: number; log: string[] }>;
  /** Every webhook sent: payment id, when it was sent, when it was acknowledged (202). */
  sent: FlowRecord['sent'];
  /** Polls of every process's /readyz: when all answered 200. */
  ready: Array<{ at: number; ready: boolean }>;
}

const BUILDS = [
  { label: 'this checkout', root: ROOT },
  ...(process.env.FLOW_BEFORE_ROOT
    ? [{ label: process.env.FLOW_BEFORE_ROOT, root: `${process.env.FLOW_BEFORE_ROOT.replace(/\/$/, '')}/` }]
    : []),
];

describe.skipIf(BROKERS.length !== 3)('the whole flow through broker outages (three-broker cluster)', () => {
  const systems: System[] = [];
  let callbackServer: Server;
  const secret = buildSecret();
  const callbackSecret = buildSecret();
  /** Callbacks received: payment id and arrival time (the PMS's view), of every system. */
  const callbacks: Array<{ id: string; at: number }> = [];
  const phases: FlowRecord['phases'] = { oneDownAt: 0, oneBackAt: 0, twoDownAt: 0, twoBackAt: 0 };
  let sending = false;
  let sender: Promise<void> = Promise.resolve();
  let sampler: Promise<void> = Promise.resolve();
  let sampling = true;

  function rentbridge(
    system: System,
    name: string,
    args: string[],
    port: number,
    env: Record<string, string> = {},
  ) {
    const log: string[] = [];
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: system.root,
      env: {
        ...process.env,
        DATABASE_URL: system.database.url,
        KAFKA_BROKERS: BROKERS.join(','),
        KAFKA_TOPIC_PREFIX: system.prefix,
        KAFKA_TOPIC_PARTITIONS: '3',
        PARTNER_API_URL: system.sandbox.url,
        PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [secret] }),
        HTTP_PORT: String(port),
        LOG_LEVEL: process.env.FLOW_LOG ?? 'warn',
        RELAY_STALL_SECONDS: '5',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // FLOW_LOG_DIR=<dir>: every process's whole output in <dir>/<name>.log (with FLOW_LOG=info, what
    // the clients did during an outage).
    const file = process.env.FLOW_LOG_DIR
      ? createWriteStream(`${process.env.FLOW_LOG_DIR}/${system.prefix}-${name}.log`)
      : null;
    const keep = (d: Buffer) => {
      file?.write(d);
      log.push(d.toString());
      if (log.length > 200) log.shift();
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    system.children.push({ name, child, port, log });
  }

  const readyz = async (port: number) =>
    fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
      (r) => r.status === 200,
      () => false,
    );
  const allReady = async (system: System) =>
    (await Promise.all(system.children.map((c) => readyz(c.port)))).every(Boolean);
  /** The processes whose /readyz is not 200, each with what it says (for a failure to name). */
  const notReady = async (system: System) =>
    (
      await Promise.all(
        system.children.map(async (c) => {
          const said = await fetch(`http://127.0.0.1:${c.port}/readyz`, {
            signal: AbortSignal.timeout(2000),
          }).then(
            async (r) => (r.status === 200 ? null : `${r.status} ${await r.text()}`),
            (error: unknown) => String(error),
          );
          return said === null ? null : `${c.name}: ${said}`;
        }),
      )
    ).filter((line) => line !== null);

  async function sendOne(system: System): Promise<void> {
    const enrollment = system.enrollments[system.sent.length % system.enrollments.length]!;
    const body = buildRentPayment({ enrollment_id: enrollment });
    const record = { id: body.data.payment_id as string, sentAt: Date.now(), ackedAt: null as number | null };
    system.sent.push(record);
    // A 5xx (storage slow) is sent again with the same webhook id, as a PMS would.
    const webhookId = `msg_${randomBytes(8).toString('hex')}`;
    for (let attempt = 0; attempt < 5; attempt++) {
      const res = await send(`http://127.0.0.1:${system.receiverPort}`, '/webhooks/pms/acme', body, {
        secret,
        webhookId,
      }).catch(() => null);
      if (res && res.status < 300) {
        record.ackedAt = Date.now();
        return;
      }
      await sleep(500);
    }
  }

  beforeAll(async () => {
    // Every broker answers first: a file run before this one may have killed one and be reviving it.
    await vi.waitFor(
      async () => expect((await Promise.all(BROKERS.map((b) => answers(b)))).every(Boolean)).toBe(true),
      { timeout: 300_000, interval: 500 },
    );
    callbackServer = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const id = (JSON.parse(body) as { data?: { command_id?: string } }).data?.command_id;
        if (id) callbacks.push({ id, at: Date.now() });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => callbackServer.listen(0, '127.0.0.1', r));
    const callbackUrl = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/outcomes`;
    for (const build of BUILDS) {
      const database = await createTestDatabase();
      const sandbox = await startSandbox({ port: 0 });
      const records = await createSandboxControl(sandbox.url).addRecords(
        'enrollments',
        Array.from({ length: ENROLLMENTS }, () => ({ status: 'active', rental_payments: [] })),
      );
      const system: System = {
        ...build,
        database,
        sandbox,
        prefix: `f53${randomBytes(3).toString('hex')}.`,
        receiverPort: await freePort(),
        enrollments: records.map((r) => Number(r.id)),
        children: [],
        sent: [],
        ready: [],
      };
      systems.push(system);
      rentbridge(system, 'receiver', ['receiver'], system.receiverPort);
      rentbridge(system, 'relay', ['relay'], await freePort());
      rentbridge(system, 'consumer', ['consumer', 'rental-payments'], await freePort());
      rentbridge(system, 'callbacks', ['callbacks', 'run'], await freePort(), {
        PMS_CALLBACKS: JSON.stringify({ acme: { url: callbackUrl, secrets: [callbackSecret] } }),
        CALLBACK_POLL_MS: '100',
      });
    }
    await vi.waitFor(
      async () => {
        for (const system of systems) {
          for (const c of system.children)
            if (c.child.exitCode !== null) throw new Error(`${c.name} exited:\n${c.log.join('')}`);
          expect(await allReady(system)).toBe(true);
        }
      },
      { timeout: 300_000, interval: 1000 },
    );
    sampler = (async () => {
      while (sampling) {
        await Promise.all(
          systems.map(async (s) => s.ready.push({ at: Date.now(), ready: await allReady(s) })),
        );
        await sleep(250);
      }
    })();
  }, 400_000);

  afterAll(async () => {
    sending = false;
    await sender;
    sampling = false;
    await sampler;
    await Promise.all(
      systems.flatMap((s) =>
        s.children.map(
          ({ child }) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null) return resolve();
              const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
              child.once('exit', () => (clearTimeout(t), resolve()));
              child.kill('SIGTERM');
            }),
        ),
      ),
    );
    // Whatever happened, the cluster is left whole for the next run.
    await Promise.all(['1', '2', '3'].map((n) => cluster('revive', n).catch(() => undefined)));
    if (callbackServer) await new Promise((r) => callbackServer.close(r));
    for (const s of systems) {
      await s.sandbox.close();
      await s.database.drop();
    }
  }, 300_000);

  /** Starts the brokers again (at once); when every broker answers. */
  async function revive(nodes: string[]): Promise<number> {
    await Promise.all(nodes.map((n) => cluster('revive', n)));
    await expect
      .poll(async () => (await Promise.all(BROKERS.map((b) => answers(b)))).every(Boolean), {
        timeout: 300_000,
        interval: 100,
      })
      .toBe(true);
    return Date.now();
  }

  it('one broker down is a blip; after two, back within seconds; each payment applied once', async () => {
    sending = true;
    sender = (async () => {
      const every = 1000 / RATE;
      const start = Date.now();
      let n = 0;
      while (sending) {
        for (const system of systems) void sendOne(system);
        n += 1;
        await sleep(Math.max(0, start + n * every - Date.now()));
      }
    })();
    await sleep(STEADY_MS);
    // Taken before the kill: the script returns a second or two after the broker died (it waits
    // for the process to go), and a gap measured from its return would miss its first seconds.
    phases.oneDownAt = Date.now();
    await cluster('kill', '1');
    await sleep(DOWN_MS);
    phases.oneBackAt = await revive(['1']);
    await sleep(STEADY_MS);
    phases.twoDownAt = Date.now();
    await Promise.all([cluster('kill', '2'), cluster('kill', '3')]);
    await sleep(DOWN_MS);
    phases.twoBackAt = await revive(['2', '3']);
    await sleep(STEADY_MS);
    sending = false;
    await sender;

    const failures: unknown[] = [];
    const kafka = new Kafka({ clientId: 'flow-reader', brokers: BROKERS, logLevel: logLevel.NOTHING });
    const all: Record<string, unknown> = {};
    for (const system of systems) {
      const failure = await settleAndMeasure(system, kafka, phases, callbacks).then(
        (r) => ((all[system.label] = r), null),
        (error: unknown) => error,
      );
      if (failure) failures.push(failure);
    }
    if (process.env.FLOW_FIGURES_OUT)
      writeFileSync(process.env.FLOW_FIGURES_OUT, JSON.stringify(all, null, 1));
    if (failures.length > 0) throw failures[0];
  }, 2_400_000);

  /** Waits for a system's commands to settle, prints its figures, then checks nothing was lost. */
  async function settleAndMeasure(
    system: System,
    kafka: Kafka,
    phases: FlowRecord['phases'],
    callbacks: FlowRecord['callbacks'],
  ) {
    const { database, sent, prefix } = system;
    const acked = sent.filter((s) => s.ackedAt !== null);
    // Every acknowledged webhook's command is final (its outcome is on Kafka, or about to be).
    // Waited for, then checked after the figures are printed: a run that did not settle still shows them.
    const finals = async () =>
      Number(
        (
          await database.sql.query<{ n: string }>(
            `SELECT count(*) AS n FROM commands WHERE state IN ('applied', 'already_applied', 'rejected', 'exhausted', 'unverified')`,
          )
        ).rows[0]!.n,
      );
    const settled = await expect
      .poll(finals, { timeout: 300_000, interval: 1000 })
      .toBeGreaterThanOrEqual(acked.length)
      .then(
        () => null,
        (error: unknown) => error,
      );
    // A final command's outcome is sent just after its state is kept: wait until they are all in.
    const outcomeTopic = `${prefix}${TOPICS.rentalPaymentOutcomes}`;
    const published = async () => {
      const admin = kafka.admin();
      await admin.connect();
      try {
        return (await admin.fetchTopicOffsets(outcomeTopic)).reduce((n, o) => n + Number(o.high), 0);
      } finally {
        await admin.disconnect();
      }
    };
    await expect
      .poll(published, { timeout: 60_000, interval: 1000 })
      .toBeGreaterThanOrEqual(acked.length)
      .catch(() => undefined);
    const commands = await readWhole(kafka, `${prefix}${TOPICS.rentalPayments}`);
    const outcomes = await readWhole(kafka, outcomeTopic);
    const paymentOf = (m: KafkaMessage) =>
      (JSON.parse(m.value!.toString()) as { data: { payment_id?: string; command_id?: string } }).data;
    const ids = new Set(sent.map((s) => s.id));
    const record: FlowRecord = {
      sent,
      phases,
      commands: commands.map((m) => ({ id: paymentOf(m).payment_id!, at: Number(m.timestamp) })),
      outcomes: outcomes.map((m) => ({ id: paymentOf(m).command_id!, at: Number(m.timestamp) })),
      callbacks: callbacks.filter((c) => ids.has(c.id)),
      ready: system.ready,
    };
    const figures = flowFigures(record);
    console.log(`${system.label}:\n${formatFigures(figures)}`);
    if (settled) throw settled;
    await expect.poll(() => notReady(system), { timeout: 60_000, interval: 500 }).toEqual([]);
    // Nothing acknowledged lost: every 202 has its command and its outcome on Kafka.
    const onKafka = new Set(record.commands.map((c) => c.id));
    const withOutcome = new Set(record.outcomes.map((o) => o.id));
    expect(acked.filter((s) => !onKafka.has(s.id))).toEqual([]);
    expect(acked.filter((s) => !withOutcome.has(s.id))).toEqual([]);
    // Each applied once: the Partner API's write ledger (the sandbox's) has one applied write per
    // payment (its request id is the payment id and the attempt, e.g. `pay-….a1`).
    const { writes } = await createSandboxControl(system.sandbox.url).ledger();
    const applied = writes.filter((w) => w.applied).map((w) => w.request_id.replace(/\.a\d+$/, ''));
    expect(applied.length).toBe(new Set(applied).size);
    const appliedIds = new Set(applied);
    expect(acked.filter((s) => !appliedIds.has(s.id))).toEqual([]);
    return { figures, record };
  }
});

/** Every message of `topic`, read from the beginning up to its end offsets as they are now. */
async function readWhole(kafka: Kafka, topic: string): Promise<KafkaMessage[]> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const total = ends.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
  const consumer = kafka.consumer({ groupId: `flow-${randomBytes(4).toString('hex')}` });
  const messages: KafkaMessage[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve) => {
    if (total === 0) return resolve();
    void consumer.run({
      eachMessage: async ({ message }) => {
        messages.push(message);
        if (messages.length >= total) resolve();
      },
    });
  });
  await consumer.disconnect();
  return messages;
}
