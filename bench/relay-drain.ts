/**
 * `npm run bench -- relay` (issue 33): the relay draining a backlog of BENCH_RELAY_ROWS (100,000;
 * `--relay-rows=1000000` or BENCH_RELAY_ROWS=1000000 for issue 29's million) unpublished state
 * changes, above BENCH_RELAY_PUBLISHED (50,000) already-published rows still within retention,
 * against a plain kafkajs idempotent producer (acks=all; kafkajs 2.2.4 as published, not the
 * project's patched copy) sending the very same messages (same keys, values, headers, partition
 * count) in requests of the same byte bound, one after the other, in the same run, each in a
 * process of its own (bench/plain-producer.ts). Figures:
 * - msgs/s of both (the relay's from its first ack to its last: start-up excluded) and their ratio;
 * - CPU per message of this process (JS and Prisma's engine; PostgreSQL's own CPU is not counted);
 * - while the relay drains: signed rent payments sent to the real receiver one every 250 ms, the
 *   time from each 2xx to its command's arrival on commands.rental-payments (p50, p99, max);
 * - the receiver's acknowledgements per second while the relay drains a second backlog, against
 *   the same load with no backlog (load generator bench/ingest-load.ts in its own process).
 * Figures, not a test.
 */
import { execFile } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { pino } from 'pino';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { createDb } from '../src/db/prisma.js';
import { ensureTopics, topicName, TOPICS } from '../src/kafka/topics.js';
import { createLogger } from '../src/logger.js';
import { createIngestWriter } from '../src/receiver/ingest-writer.js';
import { databaseBase, kafkaBrokers } from './env.js';
import { receiverApp } from './receiver-app.js';
import { createRelay } from '../src/relay/relay.js';
import { BACKLOG_TOPIC, seedBacklog } from './relay-seed.js';
import type { BenchResult } from './types.js';

const run$ = promisify(execFile);
const LOAD = fileURLToPath(new URL('./ingest-load.ts', import.meta.url));
const PLAIN = fileURLToPath(new URL('./plain-producer.ts', import.meta.url));
const TSX = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

function rowsAsked(): number {
  const flag = process.argv.find((a) => a.startsWith('--relay-rows='));
  return Number(flag?.split('=')[1] ?? process.env.BENCH_RELAY_ROWS ?? 100_000);
}

export async function run(): Promise<BenchResult> {
  const rows = rowsAsked();
  const published = Number(process.env.BENCH_RELAY_PUBLISHED ?? 50_000);
  const partitions = Number(process.env.BENCH_RELAY_PARTITIONS ?? 3);
  // BENCH_RELAY_STORED_VALUES=0: rows as written before message values were stored (the relay
  // builds each message at send time, as it did before issue 33's last step).
  const storedValues = process.env.BENCH_RELAY_STORED_VALUES !== '0';
  const logger = createLogger(
    { level: process.env.LOG_LEVEL ?? 'info' },
    pino.destination({ dest: '/dev/null', sync: true }),
  );
  const baseUrl = databaseBase();
  const brokers = kafkaBrokers();
  const schema = `bench_relay_${randomBytes(4).toString('hex')}`;
  const databaseUrl = withSchema(baseUrl, schema);
  const plainPrefix = `benchplain${randomBytes(3).toString('hex')}.`;
  const prefix = `benchrelay${randomBytes(3).toString('hex')}.`;
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const figures: Record<string, number | string> = {};
  const notes: string[] = [];
  const topics = [BACKLOG_TOPIC, TOPICS.rentalPayments];

  await migrate(databaseUrl);
  const { connectionString } = parseDatabaseUrl(databaseUrl);
  const sql = new pg.Pool({ connectionString, max: 2, options: `-c search_path=${quoteIdent(schema)}` });
  const db = createDb(databaseUrl, { max: 10 });
  const kafka = new Kafka({ clientId: 'bench-relay', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, { prefix: plainPrefix, partitions, topics });
  await ensureTopics(admin, { prefix, partitions, topics });
  const writer = createIngestWriter({ db, databaseUrl, logger, concurrency: 2 });
  const app = receiverApp({ logger, writer, secret });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const webhookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/pms/acme`;

  // Commands' arrival on Kafka, by payment id.
  const arrived = new Map<string, number>();
  const consumer = kafka.consumer({ groupId: `bench-relay-${randomUUID()}`, maxWaitTimeInMs: 20 });
  await consumer.connect();
  await consumer.subscribe({ topic: topicName(prefix, TOPICS.rentalPayments), fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const id = /pay-bench-[0-9a-f-]+/.exec(message.value?.toString() ?? '')?.[0];
      if (id && !arrived.has(id)) arrived.set(id, Date.now());
    },
  });

  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  async function sendCommand(): Promise<{ id: string; ackedAt: number } | null> {
    const id = `pay-bench-${randomUUID()}`;
    const webhookId = `msg_${randomUUID()}`;
    const body = JSON.stringify({
      type: 'rent_payment.received',
      data: { payment_id: id, enrollment_id: 'enr-1', amount_cents: 125_000, paid_on: '2026-11-01' },
    });
    const at = Math.floor(Date.now() / 1000);
    const signature = `v1,${createHmac('sha256', key).update(`${webhookId}.${at}.${body}`).digest('base64')}`;
    const res = await fetch(webhookUrl, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': webhookId,
        'webhook-timestamp': String(at),
        'webhook-signature': signature,
      },
    });
    return res.ok ? { id, ackedAt: Date.now() } : null;
  }

  async function waitFor(cond: () => boolean | Promise<boolean>, ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (!(await cond())) {
      if (Date.now() > until) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  // Through the partial index of unpublished rows (an index-only scan), and asked only once the
  // relay has acknowledged the rows seeded: a scan of the whole table every 50 ms took PostgreSQL
  // CPU from the drain it measured.
  const unpublished = async () =>
    Number(
      (
        await sql.query<{ n: string }>(
          'SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND parked_at IS NULL',
        )
      ).rows[0]!.n,
    );

  /** Rows the running drain's relay has had acknowledged so far. */
  let ackedNow = 0;
  /** Starts a relay; resolves with its timing once the `seeded` rows (and any others) are published. */
  async function drain(
    seeded: number,
    during?: () => Promise<void>,
  ): Promise<{
    rate: number;
    cpuUsPerMsg: number;
    sent: number;
    seconds: number;
  }> {
    let first = 0;
    let last = 0;
    let firstCount = 0;
    let count = 0;
    const relay = createRelay({
      db,
      kafka,
      logger,
      databaseUrl,
      topicPrefix: prefix,
      retentionHours: 72,
      afterSend: async (sent) => {
        const now = Date.now();
        if (first === 0) {
          first = now;
          firstCount = sent.length;
        }
        last = now;
        count += sent.length;
        ackedNow = count;
      },
    });
    const cpu = process.cpuUsage();
    await relay.start();
    let duringRun: Promise<void> | undefined;
    try {
      await waitFor(() => first > 0, 60_000);
      duringRun = during?.();
      await waitFor(async () => count >= seeded && (await unpublished()) === 0, 1_800_000);
      await duringRun;
      // A command accepted while the last rows were counted is published before the relay stops.
      await waitFor(async () => (await unpublished()) === 0, 60_000);
    } finally {
      await relay.stop();
    }
    const used = process.cpuUsage(cpu);
    const seconds = (last - first) / 1000;
    return {
      rate: Math.round((count - firstCount) / Math.max(seconds, 0.001)),
      cpuUsPerMsg: Math.round((used.user + used.system) / Math.max(1, count)),
      sent: count,
      seconds,
    };
  }

  try {
    await sendCommand(); // warm-up: the receiver's path and the consumer's assignment
    // The relay's warm-up, as the plain producer's first pass is its own: a small drain first, so
    // that the one measured is not the first run of the relay's code (a relay draining after an
    // outage has been running all along).
    const warmUp = Math.min(20_000, rows);
    await seedBacklog(sql, warmUp, 0, { storedValues });
    await drain(warmUp);
    await seedBacklog(sql, rows, published, { storedValues });
    // The backlog: the rows of its topic after the last one seeded as published.
    const { rows: lastPublished } = await sql.query<{ id: string | null }>(
      'SELECT max(id) AS id FROM outbox WHERE topic = $1 AND published_at IS NOT NULL',
      [BACKLOG_TOPIC],
    );
    const backlogAfterId = lastPublished[0]?.id ?? '0';

    /** A warm pass of the plain producer (its own process) over the backlog's rows: msgs/s, CPU µs/msg. */
    const plainPass = async (
      kafkajs: 'stock' | 'patched' = 'stock',
    ): Promise<{ rate: number; cpu: number }> => {
      const { stdout } = await run$(TSX, [PLAIN], {
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          KAFKA_BROKERS: brokers.join(','),
          TOPIC: topicName(plainPrefix, BACKLOG_TOPIC),
          OUTBOX_TOPIC: BACKLOG_TOPIC,
          AFTER_ID: backlogAfterId,
          ROWS: String(rows),
          PASSES: '2', // the first warms the process up (JIT, connections): the second is counted
          KAFKAJS: kafkajs,
        },
        maxBuffer: 1 << 20,
      });
      return JSON.parse(stdout.trim().split('\n').at(-1)!) as { rate: number; cpu: number };
    };
    const plainBefore = await plainPass();
    figures.backlog_rows = rows;
    figures.published_rows_kept = published;

    // The relay, with a command sent to the receiver every 250 ms while it drains.
    const commands: Array<{ id: string; ackedAt: number }> = [];
    let draining = true;
    const relayRun = await drain(rows, async () => {
      while (draining) {
        const c = await sendCommand();
        if (c) commands.push(c);
        if (ackedNow > rows * 0.95) break; // only while the catch-up is well under way
        await new Promise((r) => setTimeout(r, 250));
      }
    });
    draining = false;
    await waitFor(() => commands.every((c) => arrived.has(c.id)), 30_000).catch(() => undefined);
    const waits = commands.filter((c) => arrived.has(c.id)).map((c) => arrived.get(c.id)! - c.ackedAt);
    // The plain producer again right after: the machine's load drifts by the minute, and the two
    // passes bracket the relay's drain.
    const plainAfter = await plainPass();
    // For comparison only: the same producer on the project's patched kafkajs.
    const plainPatched = await plainPass('patched');
    const plainRate = Math.round((plainBefore.rate + plainAfter.rate) / 2);
    const plainCpu = Math.round((plainBefore.cpu + plainAfter.cpu) / 2);
    figures.plain_producer_msgs_per_s_before = plainBefore.rate;
    figures.plain_producer_msgs_per_s_after = plainAfter.rate;
    figures.plain_producer_msgs_per_s = plainRate;
    figures.plain_producer_cpu_us_per_msg = plainCpu;
    figures.plain_producer_on_patched_kafkajs_msgs_per_s = plainPatched.rate;
    figures.plain_producer_on_patched_kafkajs_cpu_us_per_msg = plainPatched.cpu;
    figures.relay_msgs_per_s = relayRun.rate;
    figures.relay_vs_plain_ratio = Number((relayRun.rate / plainRate).toFixed(2));
    figures.relay_cpu_us_per_msg = relayRun.cpuUsPerMsg;
    // CPU per message is far steadier than msgs/s on a shared machine: on a starved one the ratio
    // of rates follows the ratio of CPU.
    figures.plain_vs_relay_cpu_ratio = Number((plainCpu / relayRun.cpuUsPerMsg).toFixed(2));
    figures.relay_drain_seconds = Number(relayRun.seconds.toFixed(1));
    figures.commands_during_drain = commands.length;
    figures.commands_lost = commands.length - waits.length;
    figures.command_wait_p50_ms = percentile(waits, 50);
    figures.command_wait_p99_ms = percentile(waits, 99);
    figures.command_wait_max_ms = Math.max(0, ...waits);

    // The receiver's acks/s under load, without and then with a drain going on.
    const loadFor = async () => {
      const { stdout } = await run$(TSX, [LOAD], {
        env: { ...process.env, URL: webhookUrl, CONNECTIONS: '32', SECONDS: '4', SECRET: secret },
      });
      return JSON.parse(stdout.trim().split('\n').at(-1)!) as { acksPerSecond: number; p99: number };
    };
    const idle = await loadFor();
    const second = Math.min(rows, 100_000);
    await seedBacklog(sql, second, 0, { storedValues });
    let busy = { acksPerSecond: 0, p99: 0 };
    await drain(second, async () => {
      busy = await loadFor();
    });
    figures.receiver_acks_per_s_no_drain = idle.acksPerSecond;
    figures.receiver_acks_per_s_while_draining = busy.acksPerSecond;
    figures.receiver_p99_ms_while_draining = busy.p99;
    notes.push(
      `backlog: ${rows} rows of ${BACKLOG_TOPIC} (${partitions} partitions, 5,000 keys, ~600-byte CloudEvents) above ${published} published rows kept for retention`,
      'plain producer: kafkajs 2.2.4 as published (the kafkajs-stock alias, without patches/), idempotent, maxInFlightRequests 1, acks=all, one sendBatch of at most RELAY_MAX_BATCH_BYTES after the other, messages built beforehand, in a process of its own (bench/plain-producer.ts: no heap shared with the relay), its warm second pass counted; one pass just before the relay drains and one just after, their mean compared. The same producer on the patched kafkajs is shown beside, for comparison only',
      'relay rate: rows acknowledged from its first ack to its last (start-up excluded), after a warm-up drain of 20,000 rows; CPU: this process (JS + Prisma engine), PostgreSQL not counted',
      "command wait: from the receiver's 2xx to the command's arrival at a consumer of commands.rental-payments, while the backlog drains",
      'receiver acks/s: 32 connections for 4 s (bench/ingest-load.ts), relay and receiver in this one process as in `rentbridge start`',
    );
    return { name: 'relay', figures, notes };
  } finally {
    server.closeAllConnections();
    server.close();
    await consumer.disconnect();
    await writer.close();
    await db.$disconnect();
    await sql.end();
    const drop = new pg.Client({ connectionString: parseDatabaseUrl(baseUrl).connectionString });
    await drop.connect();
    await drop.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await drop.end();
    await admin
      .deleteTopics({ topics: [plainPrefix, prefix].flatMap((p) => topics.map((t) => topicName(p, t))) })
      .catch(() => undefined);
    await admin.disconnect();
  }
}
