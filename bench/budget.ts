/**
 * `npm run bench -- budget` (issues 4 and 15): the shared rate budget under load.
 *
 * 1. Lanes (issue 15): the real roles as separate processes (receiver, relay, the
 *    application-decisions consumer, and in the second phase the poller) against the sandbox at
 *    BENCH_BUDGET_LIMIT (650) per minute. Signed PMS `application.decided` webhooks arrive at a
 *    steady BENCH_BUDGET_COMMANDS_PER_MINUTE (60); every 10th write meets a 500 after it was
 *    applied, so the guard reads back. Phase "baseline": poller off; phase "poller": the poller
 *    runs a `customer_issues` pass of one request per customer (BENCH_BUDGET_CUSTOMERS, 1000)
 *    every few seconds, so it saturates the budget for the whole phase; the commands start
 *    BENCH_BUDGET_LEAD_SECONDS (65) after it, once the window holds nothing but its requests. Figures per phase: write
 *    and read-back wait p50/p99 (every slot, from the budget's trace log), command end-to-end
 *    latency p50/p99 (webhook accepted → outcome published, the outcome's Kafka timestamp),
 *    poller requests per minute and its share of what the higher lanes leave, 429s.
 * 2. Shared (issue 4): 3 processes share one budget of BENCH_BUDGET_SHARED_LIMIT (120) per minute
 *    for BENCH_BUDGET_SHARED_SECONDS (60; 0 skips it) → fraction of the limit achieved, 429s.
 *
 * Env: BENCH_BUDGET_SECONDS (120 per phase), DATABASE_URL, KAFKA_BROKERS (127.0.0.1:9092).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { ensureTopics, TOPICS } from '../src/kafka/topics.js';
import type { SandboxControl } from '../src/dev/sandbox/control-client.js';
import { createSandboxControl, startSandbox } from '../src/dev/sandbox/index.js';
import { databaseBase, kafkaBrokers } from './env.js';
import type { BenchResult } from './types.js';
import { freePort } from '../test/support/free-port.js';

const run$ = promisify(execFile);
const WORKER = fileURLToPath(new URL('../test/partner/support/budget-worker.ts', import.meta.url));
const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const TSX = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url));

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the roles' logs tell: every slot taken (lane, wait) and every 429. */
interface SlotLine {
  at: number;
  lane: string;
  waitedMs: number;
}

interface Role {
  child: ChildProcess;
  stop(): Promise<void>;
}

interface Flow {
  env: NodeJS.ProcessEnv;
  slots: SlotLine[];
  throttled: number[];
  /** Lines that say something failed, for the notes (the first few). */
  errors: string[];
}

function startRole(flow: Flow, args: string[]): Role {
  // Every role serves its own /metrics and health (decision 021): only the receiver's port is
  // the one the bench drives; the others take a free one.
  const env = args[0] === 'receiver' ? flow.env : { ...flow.env, HTTP_PORT: '0' };
  const child = spawn(TSX, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let rest = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString()).split('\n');
    rest = lines.pop() ?? '';
    const at = Date.now();
    for (const line of lines) {
      if (line.includes('"rate budget slot taken"')) {
        const entry = JSON.parse(line) as { lane: string; waitedMs: number };
        flow.slots.push({ at, lane: entry.lane, waitedMs: entry.waitedMs });
      } else if (line.includes('"partner api throttled"')) {
        flow.throttled.push(at);
      } else if (line.includes('"level":50') && flow.errors.length < 5) {
        flow.errors.push(`${args.join(' ')}: ${line.slice(0, 300)}`);
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    if (flow.errors.length < 5) flow.errors.push(`${args.join(' ')}: ${chunk.toString().slice(0, 300)}`);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

interface Phase {
  name: string;
  figures: Record<string, number>;
}

/**
 * Sends one decision per interval for `seconds`, then waits for the outcomes (60 s at most).
 * Returns the end-to-end latencies and the time range to read the slots from.
 */
async function drive(
  options: {
    receiverUrl: string;
    signer: Webhook;
    control: SandboxControl;
    applications: string[];
    outcomes: Map<string, number>;
    seconds: number;
    perMinute: number;
  },
  label: string,
): Promise<{ latencies: number[]; sent: number; from: number; to: number; missing: number }> {
  const accepted = new Map<string, number>();
  const from = Date.now();
  const everyMs = 60_000 / options.perMinute;
  const total = Math.floor((options.seconds * 1000) / everyMs);
  for (let i = 0; i < total; i++) {
    const due = from + i * everyMs;
    if (due > Date.now()) await sleep(due - Date.now());
    const applicationId = options.applications.shift();
    if (!applicationId) throw new Error('bench ran out of seeded applications');
    if (i % 10 === 5) {
      // Applied, then a 500: the guard reads back before it decides (the read-back lane).
      await options.control.addFault({
        method: 'POST',
        path: `/partner/v1/applications/${applicationId}/approve`,
        kind: 'apply_then_error',
        status: 500,
        times: 1,
      });
    }
    const decisionId = `bench-${label}-${randomUUID()}`;
    const id = `msg_${randomUUID()}`;
    const body = JSON.stringify({
      type: 'application.decided',
      data: { decision_id: decisionId, application_id: applicationId, decision: 'approve' },
    });
    const now = new Date();
    const res = await fetch(`${options.receiverUrl}/webhooks/pms/bench`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': options.signer.sign(id, now, body),
      },
      body,
    });
    if (res.status >= 300) throw new Error(`receiver answered ${res.status}: ${await res.text()}`);
    accepted.set(decisionId, Date.now());
  }
  const sentUntil = Date.now();
  const deadline = sentUntil + 60_000;
  while (Date.now() < deadline && [...accepted.keys()].some((k) => !options.outcomes.has(k)))
    await sleep(200);
  const latencies: number[] = [];
  let missing = 0;
  for (const [k, at] of accepted) {
    const published = options.outcomes.get(k);
    if (published === undefined) missing++;
    else latencies.push(published - at);
  }
  return { latencies, sent: accepted.size, from, to: sentUntil, missing };
}

function laneFigures(
  flow: Flow,
  prefix: string,
  range: { from: number; to: number },
  limit: number,
): Record<string, number> {
  const inRange = flow.slots.filter((s) => s.at >= range.from && s.at <= range.to);
  const minutes = (range.to - range.from) / 60_000;
  const figures: Record<string, number> = {};
  const perMinute: Record<string, number> = {};
  for (const lane of ['write', 'readback', 'poll']) {
    const waits = inRange.filter((s) => s.lane === lane).map((s) => s.waitedMs);
    perMinute[lane] = waits.length / minutes;
    figures[`${prefix}_${lane}_slots`] = waits.length;
    figures[`${prefix}_${lane}_wait_p50_ms`] = Math.round(percentile(waits, 50));
    figures[`${prefix}_${lane}_wait_p99_ms`] = Math.round(percentile(waits, 99));
    figures[`${prefix}_${lane}_wait_max_ms`] = Math.round(Math.max(0, ...waits));
  }
  figures[`${prefix}_poll_requests_per_minute`] = Number(perMinute.poll!.toFixed(1));
  // The budget's window is 61 s: it leaves limit × 60/61 per minute in the long run.
  const leftByHigher = (limit * 60) / 61 - perMinute.write! - perMinute.readback!;
  figures[`${prefix}_poll_share_of_what_writes_leave`] = Number((perMinute.poll! / leftByHigher).toFixed(3));
  figures[`${prefix}_throttled_429`] = flow.throttled.filter((t) => t >= range.from && t <= range.to).length;
  return figures;
}

async function lanes(base: string, brokers: string[]): Promise<Phase[]> {
  const seconds = Number(process.env.BENCH_BUDGET_SECONDS ?? 120);
  const limit = Number(process.env.BENCH_BUDGET_LIMIT ?? 650);
  const perMinute = Number(process.env.BENCH_BUDGET_COMMANDS_PER_MINUTE ?? 60);
  const customers = Number(process.env.BENCH_BUDGET_CUSTOMERS ?? 1000);
  const leadSeconds = Number(process.env.BENCH_BUDGET_LEAD_SECONDS ?? 65);
  const schema = `bench_lanes_${randomBytes(4).toString('hex')}`;
  const url = withSchema(base, schema);
  const prefix = `benchlanes${randomBytes(3).toString('hex')}.`;
  await migrate(url);
  const kafka = new Kafka({
    clientId: 'bench-lanes',
    brokers,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, { prefix, partitions: 3 });
  await admin.disconnect();

  const sandbox = await startSandbox({ port: 0 });
  const control = createSandboxControl(sandbox.url);
  await control.setConfig({ rate_limit_per_minute: limit });
  for (let done = 0; done < customers; done += 1000) {
    const n = Math.min(1000, customers - done);
    await control.addRecords(
      'customers',
      Array.from({ length: n }, (_, i) => ({ first_name: `Bench${done + i}`, last_name: 'Customer' })),
    );
  }
  const needed = Math.ceil(((seconds * perMinute) / 60) * 2) + 20;
  const applications = (
    await control.addRecords(
      'applications',
      Array.from({ length: needed }, () => ({ status: 'submitted' })),
    )
  ).map((r) => String(r.id));

  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const httpPort = await freePort();
  const flow: Flow = {
    env: {
      ...process.env,
      DATABASE_URL: url,
      KAFKA_BROKERS: brokers.join(','),
      KAFKA_TOPIC_PREFIX: prefix,
      PARTNER_API_URL: sandbox.url,
      PARTNER_RATE_LIMIT_PER_MINUTE: String(limit),
      PMS_WEBHOOK_SECRETS: JSON.stringify({ bench: [secret] }),
      HTTP_PORT: String(httpPort),
      LOG_LEVEL: 'trace',
      // Every pass of the customer_issues walk follows the last one closely: the poller saturates.
      POLL_INTERVAL_SECONDS: '3600',
      POLL_INTERVALS: JSON.stringify({ customers: 3600, customer_issues: 5 }),
    },
    slots: [],
    throttled: [],
    errors: [],
  };

  const outcomes = new Map<string, number>();
  const reader = kafka.consumer({ groupId: `bench-lanes-${randomBytes(4).toString('hex')}` });
  await reader.connect();
  await reader.subscribe({ topic: `${prefix}${TOPICS.applicationDecisionOutcomes}`, fromBeginning: true });
  await reader.run({
    eachMessage: async ({ message }) => {
      const event = JSON.parse(message.value!.toString()) as { data: { command_id: string } };
      outcomes.set(event.data.command_id, Number(message.timestamp));
    },
  });

  const roles: Role[] = [];
  const phases: Phase[] = [];
  try {
    roles.push(startRole(flow, ['receiver']));
    roles.push(startRole(flow, ['relay']));
    roles.push(startRole(flow, ['consumer', 'application-decisions']));
    const receiverUrl = `http://127.0.0.1:${httpPort}`;
    for (let i = 0; ; i++) {
      const ok = await fetch(`${receiverUrl}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i > 120) throw new Error(`receiver did not start: ${flow.errors.join('\n')}`);
      await sleep(500);
    }
    const signer = new Webhook(secret);
    const driveOptions = { receiverUrl, signer, control, applications, outcomes, perMinute };
    // Warm-up: the consumer has joined its group once an outcome comes back.
    const warm = await drive({ ...driveOptions, seconds: 3, perMinute: 20 }, 'warmup');
    if (warm.missing > 0) throw new Error(`warm-up outcomes missing: ${flow.errors.join('\n')}`);
    console.log('budget bench (lanes): baseline, poller off');
    await sleep(2000);

    for (const phase of ['baseline', 'poller'] as const) {
      if (phase === 'poller') {
        console.log(
          `budget bench (lanes): poller on, customer_issues passes of ${customers} requests; commands after ${leadSeconds} s`,
        );
        roles.push(startRole(flow, ['poller']));
        // The issue's scenario: the baseline's slots age out and the poller holds the window on
        // its own before the commands come (as after a restart, or an idle spell).
        await sleep(leadSeconds * 1000);
      }
      const result = await drive({ ...driveOptions, seconds }, phase);
      const figures: Record<string, number> = {
        [`${phase}_commands`]: result.sent,
        [`${phase}_command_e2e_p50_ms`]: Math.round(percentile(result.latencies, 50)),
        [`${phase}_command_e2e_p99_ms`]: Math.round(percentile(result.latencies, 99)),
        [`${phase}_command_e2e_max_ms`]: Math.round(Math.max(0, ...result.latencies)),
        [`${phase}_outcomes_missing`]: result.missing,
        ...laneFigures(flow, phase, { from: result.from, to: result.to }, limit),
      };
      console.log(figures);
      phases.push({ name: phase, figures });
    }
    if (flow.errors.length > 0) console.log("errors seen in the roles' logs:", flow.errors);
    return phases;
  } finally {
    for (const role of roles.reverse()) await role.stop();
    await reader.disconnect();
    await sandbox.close();
    await dropSchema(base, schema);
  }
}

async function dropSchema(base: string, schema: string): Promise<void> {
  const { connectionString } = parseDatabaseUrl(base);
  const admin = new pg.Client({ connectionString });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  await admin.end();
}

interface WorkerResult {
  requests: number;
  failures: number;
  statuses: Record<string, number>;
  waits: Record<string, number[]>;
}

/** Issue 4: 3 processes share one budget of L per minute, each flat out on its lanes. */
async function shared(base: string): Promise<Record<string, number>> {
  const seconds = Number(process.env.BENCH_BUDGET_SHARED_SECONDS ?? 60);
  const limit = Number(process.env.BENCH_BUDGET_SHARED_LIMIT ?? 120);
  const schema = `bench_budget_${randomBytes(4).toString('hex')}`;
  const url = withSchema(base, schema);
  await migrate(url);
  const sandbox = await startSandbox({ port: 0 });
  await createSandboxControl(sandbox.url).setConfig({ rate_limit_per_minute: limit });
  // Process 1 polls, process 2 reads back, process 3 writes (its lane) and polls: 2 loops each.
  const laneSets = ['poll,poll', 'readback,poll', 'write,poll'];
  console.log(`budget bench (shared): 3 processes, L=${limit}/min, ${seconds} s`);
  try {
    const results = await Promise.all(
      laneSets.map(async (lanes) => {
        const { stdout } = await run$(TSX, [WORKER], {
          env: {
            ...process.env,
            DATABASE_URL: url,
            SANDBOX_URL: sandbox.url,
            LIMIT: String(limit),
            SECONDS: String(seconds),
            LANES: lanes,
            BUDGET_NAME: 'bench',
          },
          maxBuffer: 64 * 1024 * 1024,
        });
        return JSON.parse(stdout.trim().split('\n').at(-1)!) as WorkerResult;
      }),
    );
    const statuses: Record<string, number> = {};
    for (const r of results)
      for (const [s, n] of Object.entries(r.statuses)) statuses[s] = (statuses[s] ?? 0) + n;
    const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
    const perMinute = answered / (seconds / 60);
    return {
      shared_limit_per_minute: limit,
      shared_seconds: seconds,
      shared_processes: 3,
      shared_requests_per_minute: Number(perMinute.toFixed(1)),
      shared_fraction_of_limit: Number((perMinute / limit).toFixed(3)),
      shared_throttled_429: statuses['429'] ?? 0,
      shared_failures: results.reduce((a, r) => a + r.failures, 0),
    };
  } finally {
    await sandbox.close();
    await dropSchema(base, schema);
  }
}

export async function run(): Promise<BenchResult> {
  const base = databaseBase();
  const brokers = kafkaBrokers();
  const figures: Record<string, number | string> = {};
  for (const phase of await lanes(base, brokers)) Object.assign(figures, phase.figures);
  if (Number(process.env.BENCH_BUDGET_SHARED_SECONDS ?? 60) > 0) Object.assign(figures, await shared(base));
  return {
    name: 'budget',
    figures,
    notes: [
      'Lanes: receiver, relay, application-decisions consumer and poller run as separate processes (`rentbridge <role>` under tsx) sharing one budget in PostgreSQL; the sandbox limits /partner/v1/* per source IP over a rolling 60 s window.',
      "Poller phase: the poller starts 65 s before the commands (the baseline's slots have aged out of the window, as after a restart or an idle spell), and runs customer_issues passes back to back.",
      'Commands: signed PMS application.decided webhooks at a steady rate; every 10th write is applied and then answered 500, so the guard reads back. End-to-end = receiver 2xx → outcome message timestamp on Kafka.',
      'Waits are every slot taken by each lane during the phase (the budget logs each at trace level); a phase counts slots taken while commands were being sent.',
      'Poll share = poll slots/min ÷ (L × 60/61 − write and read-back slots/min): what the poller got of what the higher lanes left (the budget window is 61 s).',
      'Goals (issue 15): with the poller saturating, write wait p99 ≤ 1 s, read-back wait p99 ≤ 2 s, poll share ≥ 0.9, 0 × 429.',
      'Shared: 3 processes flat out on their lanes at L=120/min (issue 4): fraction of L achieved; best steady rate L × 60/61 ≈ 0.984, the first window starts full.',
    ],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  run().then(
    (r) => console.log(JSON.stringify(r)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
