/**
 * `npm run bench -- commands` (issue 7): the cost of the guarded write, against real PostgreSQL,
 * Kafka and the sandbox over HTTP.
 *
 * 1. Limit off: BENCH_COMMANDS (default 1000) application decisions through the guarded consumer,
 *    and as many through an unguarded baseline consumer of the same shape (parse, one direct
 *    client write, publish the outcome, commit) in the same run → commands/s and the guard's
 *    overhead. Neither uses the shared budget here, so only the guard's own cost is measured.
 * 2. Limit on: sandbox and shared budget at BENCH_COMMANDS_LIMIT (default 650) per minute; the
 *    guarded consumer runs for BENCH_COMMANDS_LIMIT_SECONDS (default 122: two whole windows of the
 *    budget's 61 s, so a rolling window's burst does not inflate the figure) → writes/min and
 *    reads/min achieved, against what the budget leaves for writes after the reads.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { applicationDecisions } from '../src/command-types/application-decisions/application-decisions.js';
import { createCommandConsumer } from '../src/command-consumer/command-consumer.js';
import { createDb, type Db } from '../src/db/prisma.js';
import { applicationDecisionCommandSchema } from '../src/contracts/commands.js';
import { COMMAND_TYPES } from '../src/contracts/command-contracts.js';
import { parseCloudEvent, toCloudEvent } from '../src/contracts/cloudevent.js';
import { OUTCOME_TYPES } from '../src/contracts/outcomes.js';
import { ensureTopics, TOPICS } from '../src/kafka/topics.js';
import { createLogger } from '../src/logger.js';
import { createPartnerClient, createRateBudget, type RateBudget } from '../src/partner/index.js';
import { createSandboxControl } from '../src/dev/sandbox/index.js';
import { benchSchema, kafkaBrokers } from './env.js';
import type { BenchResult } from './types.js';

const TOPIC_SET = [
  TOPICS.applicationDecisions,
  TOPICS.applicationDecisionOutcomes,
  TOPICS.dlq(TOPICS.applicationDecisions),
];

const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });

interface Env {
  kafka: Kafka;
  db: Db;
  /** The guard's per-command locks connect on their own. */
  databaseUrl: string;
  sandboxUrl: string;
  control: ReturnType<typeof createSandboxControl>;
}

/** A partner client that notes when each non-write request was made (reads for the figures). */
function client(env: Env, budget?: RateBudget) {
  const reads: number[] = [];
  const countingFetch: typeof fetch = (input, init) => {
    const u = new URL(input instanceof Request ? input.url : String(input));
    if ((init?.method ?? 'GET') === 'GET' && !u.pathname.startsWith('/__sandbox')) reads.push(Date.now());
    return fetch(input, init);
  };
  const partner = createPartnerClient({
    baseUrl: env.sandboxUrl,
    accessKey: 'sandbox-access-key',
    secretKey: 'sandbox-secret-key',
    logger,
    fetch: countingFetch,
    ...(budget && { budget }),
  });
  return { partner, reads };
}

async function topics(env: Env): Promise<string> {
  const prefix = `bench${randomBytes(3).toString('hex')}.`;
  const admin = env.kafka.admin();
  await admin.connect();
  await ensureTopics(admin, { prefix, partitions: 3, topics: TOPIC_SET });
  await admin.disconnect();
  return prefix;
}

/** Seeds `n` submitted applications and publishes one approve command per application, newest first. */
async function seedAndPublish(env: Env, producer: Producer, prefix: string, n: number): Promise<void> {
  const ids: number[] = [];
  for (let done = 0; done < n; done += 1000) {
    const batch = Array.from({ length: Math.min(1000, n - done) }, () => ({ status: 'submitted' }));
    for (const r of await env.control.addRecords('applications', batch)) ids.push(Number(r.id));
  }
  ids.reverse();
  for (let i = 0; i < ids.length; i += 500) {
    await producer.send({
      topic: `${prefix}${TOPICS.applicationDecisions}`,
      messages: ids.slice(i, i + 500).map((id) => {
        const data = { decision_id: `bench-${prefix}${id}`, application_id: String(id), decision: 'approve' };
        return {
          key: String(id),
          value: JSON.stringify(
            toCloudEvent({
              id: data.decision_id,
              source: '/bench',
              type: COMMAND_TYPES.applicationDecision,
              data,
            }),
          ),
        };
      }),
    });
  }
}

/** Resolves when `count` outcomes were published under `prefix`; returns when the last came. */
async function waitForOutcomes(env: Env, prefix: string, count: number): Promise<number> {
  const reader = env.kafka.consumer({ groupId: `bench-reader-${randomBytes(4).toString('hex')}` });
  await reader.connect();
  await reader.subscribe({ topic: `${prefix}${TOPICS.applicationDecisionOutcomes}`, fromBeginning: true });
  let seen = 0;
  const last = await new Promise<number>((resolve) => {
    void reader.run({
      eachBatch: async ({ batch }) => {
        seen += batch.messages.length;
        if (seen >= count) resolve(Date.now());
      },
    });
  });
  await reader.disconnect();
  return last;
}

async function guardedRate(
  env: Env,
  producer: Producer,
  n: number,
): Promise<{ perSecond: number; reads: number }> {
  await env.control.reset();
  await env.control.setConfig({ rate_limit_per_minute: null });
  const prefix = await topics(env);
  await seedAndPublish(env, producer, prefix, n);
  const { partner, reads } = client(env);
  const consumer = createCommandConsumer(applicationDecisions, {
    kafka: env.kafka,
    db: env.db,
    databaseUrl: env.databaseUrl,
    partner,
    logger,
    topicPrefix: prefix,
  });
  const done = waitForOutcomes(env, prefix, n);
  const started = Date.now();
  await consumer.start();
  const finished = await done;
  await consumer.stop();
  return { perSecond: n / ((finished - started) / 1000), reads: reads.length };
}

/** The unguarded baseline: the same consumer shape, one direct write per message, no guard. */
async function baselineRate(env: Env, producer: Producer, n: number): Promise<number> {
  await env.control.reset();
  await env.control.setConfig({ rate_limit_per_minute: null });
  const prefix = await topics(env);
  await seedAndPublish(env, producer, prefix, n);
  const { partner } = client(env);
  const topic = `${prefix}${TOPICS.applicationDecisions}`;
  const consumer = env.kafka.consumer({ groupId: `bench-baseline-${randomBytes(4).toString('hex')}` });
  const out = env.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await out.connect();
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const done = waitForOutcomes(env, prefix, n);
  const started = Date.now();
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: 3,
    eachMessage: async ({ partition, message }) => {
      const command = applicationDecisionCommandSchema.parse(parseCloudEvent(message.value).data);
      const res = await partner.approveApplication(command.application_id, {}, { lane: 'write' });
      await out.send({
        topic: `${prefix}${TOPICS.applicationDecisionOutcomes}`,
        acks: -1,
        messages: [
          {
            key: command.application_id,
            value: JSON.stringify(
              toCloudEvent({
                id: `outcome.${command.decision_id}`,
                source: '/bench',
                type: OUTCOME_TYPES.application_decision,
                data: {
                  command_id: command.decision_id,
                  status: 'applied',
                  partner_request_ids: [res.requestId],
                },
              }),
            ),
          },
        ],
      });
      await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
    },
  });
  const finished = await done;
  await consumer.disconnect();
  await out.disconnect();
  return n / ((finished - started) / 1000);
}

async function atLimit(env: Env, producer: Producer, limit: number, seconds: number) {
  await env.control.reset();
  await env.control.setConfig({ rate_limit_per_minute: limit });
  const budget = createRateBudget({
    db: env.db,
    limitPerMinute: limit,
    logger,
    name: `bench-${randomBytes(3).toString('hex')}`,
  });
  const prefix = await topics(env);
  // More than the window can take, so the consumer never runs dry.
  await seedAndPublish(env, producer, prefix, Math.ceil((limit * seconds) / 60) + 200);
  const { partner, reads } = client(env, budget);
  const consumer = createCommandConsumer(applicationDecisions, {
    kafka: env.kafka,
    db: env.db,
    databaseUrl: env.databaseUrl,
    partner,
    logger,
    topicPrefix: prefix,
  });
  await consumer.start();
  // Measure from the first request on, over whole windows.
  while (reads.length === 0) await new Promise((r) => setTimeout(r, 20));
  const from = reads[0]!;
  const to = from + seconds * 1000;
  const tick = setInterval(
    () => console.log(`  at limit: ${Math.round((Date.now() - from) / 1000)} s`),
    15_000,
  );
  await new Promise((r) => setTimeout(r, to - Date.now()));
  clearInterval(tick);
  const writes = (await env.control.ledger()).writes.filter((w) => {
    const at = Date.parse(w.at);
    return at >= from && at < to;
  });
  const throttled = writes.filter((w) => w.status === 429).length;
  const applied = writes.filter((w) => w.applied).length;
  const readCount = reads.filter((t) => t >= from && t < to).length;
  await consumer.stop();
  await budget.close?.();
  const perMinute = (x: number) => (x * 60) / seconds;
  return { applied: perMinute(applied), reads: perMinute(readCount), throttled, writesSent: writes.length };
}

/**
 * The sandbox in its own process, as the Partner API is remote: its JSON work must not share the
 * consumer's event loop (it would charge the partner's cost of a list page to the guard).
 */
export async function sandboxProcess(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      "const { startSandbox } = await import('./src/dev/sandbox/index.js'); const s = await startSandbox({ port: 0 }); console.log('URL ' + s.url);",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], cwd: new URL('..', import.meta.url).pathname },
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      const m = /URL (\S+)/.exec(chunk.toString());
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`sandbox process exited with ${code}`)));
  });
  return { url, child };
}

export async function run(): Promise<BenchResult> {
  const n = Number(process.env.BENCH_COMMANDS ?? 1000);
  const limit = Number(process.env.BENCH_COMMANDS_LIMIT ?? 650);
  const seconds = Number(process.env.BENCH_COMMANDS_LIMIT_SECONDS ?? 122);
  const { url, drop } = await benchSchema('bench_cmd');
  const db = createDb(url, { max: 10 });
  const sandbox = await sandboxProcess();
  const kafka = new Kafka({
    clientId: 'bench-commands',
    brokers: kafkaBrokers(),
    logLevel: logLevel.NOTHING,
  });
  const producer = kafka.producer();
  await producer.connect();
  const env: Env = {
    kafka,
    db,
    databaseUrl: url,
    sandboxUrl: sandbox.url,
    control: createSandboxControl(sandbox.url),
  };
  try {
    console.log(`  baseline: ${n} unguarded writes`);
    const baseline = await baselineRate(env, producer, n);
    console.log(`  baseline: ${baseline.toFixed(1)} commands/s; guarded: ${n} commands`);
    const guarded = await guardedRate(env, producer, n);
    console.log(`  guarded: ${guarded.perSecond.toFixed(1)} commands/s; at ${limit}/min for ${seconds} s`);
    const limited = await atLimit(env, producer, limit, seconds);
    const leftForWrites = limit * (60 / 61) - limited.reads;
    return {
      name: 'commands',
      figures: {
        commands: n,
        baseline_commands_per_second: baseline,
        guarded_commands_per_second: guarded.perSecond,
        guard_overhead_percent: ((baseline - guarded.perSecond) / baseline) * 100,
        guarded_reads_per_command: guarded.reads / n,
        limit_per_minute: limit,
        limit_window_seconds: seconds,
        limit_writes_applied_per_minute: limited.applied,
        limit_reads_per_minute: limited.reads,
        limit_requests_per_minute: limited.applied + limited.reads,
        limit_writes_throttled_429: limited.throttled,
        limit_writes_vs_budget_left_after_reads_percent: (limited.applied / leftForWrites) * 100,
      },
      notes: [
        'The sandbox runs in its own process (the Partner API is remote); consumer, Kafka client and PostgreSQL client share one process, on a 2-core machine shared with other work.',
        'Limit off: no shared budget in either consumer, 3 partitions, 3 partitions consumed concurrently; each guarded command costs its snapshot (list pages shared for 1 s between commands, src/guard/read-backs/read-back.ts), the in_flight commit, its write and the applied commit (the last alongside the outcome publish).',
        `Limit on: sandbox and shared budget at ${limit}/min; the budget's window is 61 s (1 s safety), so it leaves ${(limit * (60 / 61)).toFixed(0)}/min; "budget left after reads" = that minus the reads made.`,
        'Reads are GET requests made by the client (snapshots, read-backs; authentication excluded as it is a POST).',
      ],
    };
  } finally {
    await producer.disconnect();
    sandbox.child.kill('SIGTERM');
    await db.$disconnect();
    await drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run().then((r) => console.log(JSON.stringify(r, null, 2)));
}
