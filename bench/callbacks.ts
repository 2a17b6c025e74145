/**
 * `npm run bench -- callbacks`: outcome callbacks against real PostgreSQL and Kafka and a local
 * HTTP receiver (issue 27).
 * 1. Alone: BENCH_CALLBACK_OUTCOMES (default 2000) outcomes of one source published to
 *    outcomes.rental-payments; each delivered to an endpoint answering 204: delivered, duplicates
 *    (webhook-ids received more than once), latency from the outcome's time to its receipt.
 * 2. Beside failing sources: the same again for that source while a second source's endpoint
 *    refuses connections and a third's answers only after its time-out, each with as many
 *    outcomes: what a dead or slow endpoint costs a healthy one.
 * Figures, not a test. Default settings (CALLBACK_CONCURRENCY 4 adapted up to
 * CALLBACK_MAX_CONCURRENCY 64, breaker after 5 failures); BENCH_CALLBACK_MAX_CONCURRENCY=4 fixes
 * it at 4, as before issue 43.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { OUTCOME_TOPICS } from '../src/kafka/topics.js';
import { createCallbacks } from '../src/callbacks/callbacks.js';
import { loadConfig } from '../src/config/config.js';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { createDb } from '../src/db/prisma.js';
import { cloudEventHeaders, toCloudEvent } from '../src/contracts/cloudevent.js';
import { OUTCOME_TYPES } from '../src/contracts/outcomes.js';
import { ensureTopics, TOPICS } from '../src/kafka/topics.js';
import { createLogger } from '../src/logger.js';
import { databaseBase, kafkaBrokers } from './env.js';
import type { BenchResult } from './types.js';

const secret = () => `whsec_${randomBytes(24).toString('base64')}`;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
}

function outcome(source: string) {
  const id = `outcome.bench-${randomUUID()}`;
  const data = {
    command_id: `pay-${randomUUID()}`,
    command_source: source,
    command_type: 'rental_payment',
    target_id: `enr-${randomUUID().slice(0, 8)}`,
    status: 'applied',
    attempts: 1,
    partner_request_ids: ['x.a1'],
  };
  const event = {
    ...toCloudEvent({
      id,
      source: 'bench',
      type: OUTCOME_TYPES.rental_payment,
      subject: data.target_id,
      data,
    }),
    commandsource: source,
    commandtype: 'rental_payment',
  };
  return {
    key: data.target_id,
    value: JSON.stringify(event),
    headers: { ...cloudEventHeaders(event), 'command-source': source, 'command-id': data.command_id },
  };
}

export async function run(): Promise<BenchResult> {
  const n = Number(process.env.BENCH_CALLBACK_OUTCOMES ?? 2000);
  const base = databaseBase();
  const brokers = kafkaBrokers();
  const schema = `bench_cb_${randomBytes(4).toString('hex')}`;
  const prefix = `bcb${randomBytes(3).toString('hex')}.`;
  const url = withSchema(base, schema);
  await migrate(url);
  const db = createDb(url, { max: 10 });
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
  const kafka = new Kafka({ clientId: 'bench-callbacks', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, { prefix, partitions: 3, topics: [...OUTCOME_TOPICS] });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();

  // The receiver: /ok answers 204 at once, /slow after 3 s (past its 1 s time-out).
  const received = new Map<string, { at: number; time: number }[]>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/slow') return void setTimeout(() => res.writeHead(200).end(), 3000);
      const id = String(req.headers['webhook-id']);
      const time = Date.parse((JSON.parse(Buffer.concat(chunks).toString()) as { time: string }).time);
      received.set(id, [...(received.get(id) ?? []), { at: Date.now(), time }]);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const deadPort = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });

  async function phase(label: string, sources: Record<string, string>, counts: Record<string, number>) {
    received.clear();
    const config = loadConfig({
      DATABASE_URL: url,
      KAFKA_TOPIC_PREFIX: prefix,
      ...(process.env.BENCH_CALLBACK_MAX_CONCURRENCY && {
        CALLBACK_MAX_CONCURRENCY: process.env.BENCH_CALLBACK_MAX_CONCURRENCY,
      }),
      PMS_CALLBACKS: JSON.stringify(
        Object.fromEntries(
          Object.entries(sources).map(([s, u]) => [s, { url: u, secrets: [secret()], timeout_ms: 1000 }]),
        ),
      ),
    });
    const callbacks = createCallbacks({ db, kafka, logger, config, groupId: `${prefix}cb-${label}` });
    await callbacks.start();
    try {
      return await measure(label, counts);
    } finally {
      await callbacks.stop();
    }
  }

  /** A topic just created may not be served yet: the first sends are retried for a while. */
  async function send(messages: ReturnType<typeof outcome>[]) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await producer.send({ topic: `${prefix}${TOPICS.rentalPaymentOutcomes}`, messages });
      } catch (error) {
        if (attempt >= 40) throw error;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  async function measure(label: string, counts: Record<string, number>) {
    const started = Date.now();
    // Interleaved, in batches of 100 per source: the failing sources' outcomes arrive with the healthy one's.
    for (let sent = 0; sent < n; sent += 100) {
      for (const [source, count] of Object.entries(counts)) {
        const batch = Math.min(100, count - sent);
        if (batch > 0) {
          await send(Array.from({ length: batch }, () => outcome(source)));
        }
      }
    }
    const deadline = Date.now() + 120_000;
    while (received.size < counts.ok! && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const elapsed = (Date.now() - started) / 1000;
    const latencies = [...received.values()].map((r) => r[0]!.at - r[0]!.time);
    const duplicates = [...received.values()].reduce((sum, r) => sum + r.length - 1, 0);
    return {
      [`${label}: delivered / published (ok source)`]: `${received.size} / ${counts.ok}`,
      [`${label}: duplicates`]: duplicates,
      [`${label}: callbacks/s (ok source)`]: received.size / elapsed,
      [`${label}: latency p50 ms`]: percentile(latencies, 50),
      [`${label}: latency p99 ms`]: percentile(latencies, 99),
    };
  }

  try {
    // The topic served before any consumer subscribes (an outcome of a source without callbacks).
    await send([outcome('warm-up')]);
    const alone = await phase('alone', { ok: `http://127.0.0.1:${port}/ok` }, { ok: n });
    const beside = await phase(
      'beside dead + slow',
      {
        ok: `http://127.0.0.1:${port}/ok`,
        dead: `http://127.0.0.1:${deadPort}/dead`,
        slow: `http://127.0.0.1:${port}/slow`,
      },
      { ok: n, dead: n, slow: n },
    );
    const pool = new pg.Pool({
      connectionString: parseDatabaseUrl(url).connectionString,
      max: 1,
      options: `-c search_path=${schema}`,
    });
    const { rows } = await pool.query(
      "SELECT source, count(*)::int AS attempts FROM callback_attempts a JOIN callback_deliveries d ON d.id = a.delivery_id WHERE source <> 'ok' GROUP BY source ORDER BY source",
    );
    await pool.end();
    return {
      name: 'callbacks',
      figures: {
        ...alone,
        ...beside,
        'attempts made to the failing endpoints meanwhile': (
          rows as Array<{ source: string; attempts: number }>
        )
          .map((r) => `${r.source} ${r.attempts}`)
          .join(', '),
      },
      notes: [
        `${n} outcomes per source; latency from the outcome's CloudEvent time (its publish) to the receiver's receipt.`,
        'beside: a source whose endpoint refuses connections and one that answers after its 1 s time-out, each with as many outcomes, interleaved; their breakers open after 5 failures and probe one callback per cooldown (30 s).',
      ],
    };
  } finally {
    await producer.disconnect();
    server.closeAllConnections();
    server.close();
    await db.$disconnect();
    const pool = new pg.Pool({ connectionString: parseDatabaseUrl(base).connectionString, max: 1 });
    await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await pool.end();
  }
}
