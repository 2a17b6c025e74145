/**
 * `npm run bench -- fairness` (issue 52): PMS sources of different sizes through the public
 * interfaces, one budget. Per scenario: `rentbridge migrate` and `rentbridge start` (every role, one
 * process) on a schema and topic prefix of their own, in front of the sandbox at 650 requests a
 * minute behind a recording proxy (every Partner request and its status counted); each source its
 * own webhook secret, its payments signed `rent_payment.received` webhooks, each to its own
 * enrollment. A payment's latency is from just before its webhook is sent to its outcome's arrival
 * on Kafka.
 *
 * - `small`: bigpms sends 1,300 payments at once (two minutes of the whole budget); 10 s later
 *   smallpms sends 10, one a second.
 * - `weighted`: acme (PMS_WEIGHTS 3) and globex (1) send 900 each at once.
 *
 * BENCH_FAIRNESS_ROOT names another checkout whose `src/cli/main.ts` runs (the "before": main's
 * code, its own migrations); BENCH_FAIRNESS_SCENARIOS picks scenarios (`small,weighted`);
 * BENCH_FAIRNESS_SCALE scales every source's payments (a short trial run); BENCH_FAIRNESS_LIMIT sets
 * the limit (default 650).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { createSandboxControl, startSandbox } from '../src/dev/sandbox/index.js';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { addEnrollments } from '../test/support/enrollments.js';
import { databaseBase, kafkaBrokers } from './env.js';
import { busyWindow, latencies, percentile, type Payment } from './fairness-figures.js';
import type { BenchResult } from './types.js';

const ROOT = process.env.BENCH_FAIRNESS_ROOT ?? fileURLToPath(new URL('..', import.meta.url));
const CLI = `${ROOT.replace(/\/$/, '')}/src/cli/main.ts`;
const TSX = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url));
/**
 * The sandbox's and the budget's limit. BENCH_FAIRNESS_LIMIT lowers both for a machine that cannot
 * reach 650 a minute: the shares by source only show where the budget, not the CPU, is what waits.
 */
const LIMIT = Number(process.env.BENCH_FAIRNESS_LIMIT ?? 650);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const execFileP = promisify(execFile);

interface Source {
  name: string;
  weight: number;
  payments: number;
  /** When it starts sending, ms after the scenario's start; `everyMs`: one payment each, else all at once. */
  startMs: number;
  everyMs?: number;
}

const SCENARIOS: Record<string, Source[]> = {
  small: [
    { name: 'bigpms', weight: 1, payments: 1300, startMs: 0 },
    { name: 'smallpms', weight: 1, payments: 10, startMs: 10_000, everyMs: 1000 },
  ],
  weighted: [
    { name: 'acme', weight: 3, payments: 900, startMs: 0 },
    { name: 'globex', weight: 1, payments: 900, startMs: 0 },
  ],
};

/** Forwards to the sandbox, counting every Partner request by status (the recording proxy). */
function recordingProxy(target: string) {
  // `reads`: GETs of enrollments (the payments' snapshots, and the poller's pass over them); the
  // rest of `requests` is the poller's other resources (applications every 60 s, ...).
  const counts = { requests: 0, writes: 0, reads: 0, throttled: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers.set(k, v);
      const partner = req.url!.startsWith('/partner/v1/');
      fetch(`${target}${req.url}`, {
        method: req.method!,
        headers,
        ...(chunks.length > 0 && { body: Buffer.concat(chunks) }),
      })
        .then(async (answer) => {
          if (partner) {
            counts.requests++;
            if (req.method === 'POST') counts.writes++;
            else if (req.url!.startsWith('/partner/v1/enrollments')) counts.reads++;
            if (answer.status === 429) counts.throttled++;
          }
          const body = Buffer.from(await answer.arrayBuffer());
          const out: Record<string, string> = {};
          answer.headers.forEach((v, k) => {
            if (k !== 'content-encoding' && k !== 'transfer-encoding' && k !== 'content-length') out[k] = v;
          });
          res.writeHead(answer.status, out).end(body);
        })
        .catch(() => res.writeHead(502).end());
    });
  });
  return { server, counts };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function freePort(): Promise<number> {
  const s = createServer();
  const url = await listen(s);
  await new Promise((r) => s.close(r));
  return Number(new URL(url).port);
}

async function scenario(label: string, sources: Source[]): Promise<Record<string, number | string>> {
  const total = sources.reduce((a, s) => a + s.payments, 0);
  const sandbox = await startSandbox({ port: 0 });
  const control = createSandboxControl(sandbox.url);
  await control.setConfig({ rate_limit_per_minute: LIMIT });
  const enrollments = await addEnrollments(control, total + 1 + 200);
  const proxy = recordingProxy(sandbox.url);
  const partnerUrl = await listen(proxy.server);

  const base = databaseBase();
  const schema = `bench_fair_${randomBytes(4).toString('hex')}`;
  const databaseUrl = withSchema(base, schema);
  const prefix = `fair${randomBytes(3).toString('hex')}.`;
  const secrets = Object.fromEntries(
    sources.map((s) => [s.name, `whsec_${randomBytes(24).toString('base64')}`]),
  );
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    KAFKA_BROKERS: kafkaBrokers().join(','),
    KAFKA_TOPIC_PREFIX: prefix,
    PARTNER_API_URL: partnerUrl,
    PARTNER_RATE_LIMIT_PER_MINUTE: String(LIMIT),
    PMS_WEBHOOK_SECRETS: JSON.stringify(Object.fromEntries(sources.map((s) => [s.name, [secrets[s.name]]]))),
    PMS_WEIGHTS: JSON.stringify(Object.fromEntries(sources.map((s) => [s.name, s.weight]))),
    // The sources share the sandbox's one key: the bench measures the shared budget, not isolation
    // (decision 051), so they are declared trusted.
    PMS_SHARED_PARTNER_KEY: 'trusted',
    // One poller pass at the start (its stored reads serve the snapshots, docs/write-budget.md).
    POLL_INTERVAL_SECONDS: '3600',
    HTTP_PORT: String(port),
    LOG_LEVEL: 'warn',
  };
  await execFileP(TSX, [CLI, 'migrate'], { env });

  const kafka = new Kafka({
    clientId: 'bench-fairness',
    brokers: kafkaBrokers(),
    logLevel: logLevel.NOTHING,
  });
  const payments = new Map<string, Payment>();
  const outcomes = new Map<string, number>();
  const errors: string[] = [];
  const child: ChildProcess = spawn(TSX, [CLI, 'start'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (c: Buffer) => {
    if (errors.length < 5) errors.push(c.toString().slice(0, 300));
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const reader = kafka.consumer({ groupId: `bench-fairness-${randomBytes(4).toString('hex')}` });
  const db = new pg.Client({ connectionString: parseDatabaseUrl(base).connectionString });
  await db.connect();
  const receiver = `http://127.0.0.1:${port}`;
  const signers = Object.fromEntries(sources.map((s) => [s.name, new Webhook(secrets[s.name]!)]));
  let nextEnrollment = 0;
  /** Each payment's enrollment (the sandbox's payments carry no id of ours: one payment each). */
  const enrollmentOf = new Map<string, string>();

  async function send(source: string): Promise<string> {
    const paymentId = `fair-${source}-${randomUUID()}`;
    const enrollmentId = String(enrollments[nextEnrollment++]);
    enrollmentOf.set(paymentId, enrollmentId);
    const body = JSON.stringify({
      type: 'rent_payment.received',
      data: {
        payment_id: paymentId,
        enrollment_id: enrollmentId,
        amount_cents: 1500,
        paid_on: '2026-11-01',
      },
    });
    const id = `msg_${randomUUID()}`;
    const sentAt = Date.now();
    payments.set(paymentId, { source, sentAt });
    for (let attempt = 1; ; attempt++) {
      // A connection reset on a loaded machine is sent again, with the same webhook-id (deduplicated).
      const res = await fetch(`${receiver}/webhooks/pms/${source}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(sentAt / 1000)),
          'webhook-signature': signers[source]!.sign(id, new Date(sentAt), body),
        },
        body,
      }).catch((error: unknown) => {
        if (attempt >= 10) throw error;
        return null;
      });
      if (!res) {
        await sleep(200);
        continue;
      }
      if (res.status < 300) return paymentId;
      if (res.status !== 503) throw new Error(`receiver answered ${res.status}: ${await res.text()}`);
      await sleep(200);
    }
  }

  let progress: NodeJS.Timeout | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    await reader.connect();
    for (let i = 0; ; i++) {
      const topics = await kafka
        .admin()
        .listTopics()
        .catch(() => [] as string[]);
      if (topics.includes(`${prefix}outcomes.rental-payments`)) break;
      if (i > 600 || child.exitCode !== null)
        throw new Error(`rentbridge start did not create its topics: ${errors.join('\n')}`);
      await sleep(500);
    }
    await reader.subscribe({ topic: `${prefix}outcomes.rental-payments`, fromBeginning: true });
    await reader.run({
      eachMessage: async ({ message }) => {
        const event = JSON.parse(message.value!.toString()) as { data: { command_id: string } };
        const id = event.data.command_id;
        outcomes.set(id, (outcomes.get(id) ?? 0) + 1);
        const p = payments.get(id);
        if (p && p.outcomeAt === undefined) p.outcomeAt = Date.now();
      },
    });
    // Started: the poller's first pass over the enrollments is done, and one payment went through.
    for (let i = 0; ; i++) {
      const { rows } = await db
        .query(
          `SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.poller_passes WHERE resource = 'enrollments'`,
        )
        .catch(() => ({ rows: [{ n: 0 }] }));
      if ((rows[0] as { n: number }).n > 0) break;
      if (i > 600 || child.exitCode !== null) throw new Error(`no poller pass: ${errors.join('\n')}`);
      await sleep(500);
    }
    const warm = await send(sources[0]!.name);
    for (let i = 0; !payments.get(warm)!.outcomeAt; i++) {
      if (i > 3000) throw new Error(`no outcome in warm-up: ${errors.join('\n')}`);
      await sleep(100);
    }
    payments.delete(warm);
    // The window empties of the start-up's requests: each scenario starts on a whole budget.
    await sleep(62_000);

    // Each second, which sources have commands waiting for the budget and their requests in its
    // window (the per-source gauges of /metrics): the budget's own view of its shares.
    const samples: Array<{ at: number; waiting: Record<string, number>; used: Record<string, number> }> = [];
    sampler = setInterval(() => {
      void fetch(`${receiver}/metrics`)
        .then((r) => r.text())
        .then((text) => {
          const read = (name: string) =>
            Object.fromEntries(
              sources.map((s) => [
                s.name,
                Number(new RegExp(`^${name}\\{source="${s.name}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0),
              ]),
            );
          samples.push({
            at: Date.now(),
            waiting: read('rentbridge_rate_budget_source_waiting'),
            used: read('rentbridge_rate_budget_source_used'),
          });
        })
        .catch(() => undefined);
    }, 1000);
    const before = { ...proxy.counts };
    progress = setInterval(() => {
      const done = [...payments.values()].filter((p) => p.outcomeAt).length;
      console.log(
        `  ${label}: ${done} of ${total} outcomes, ${proxy.counts.requests - before.requests} requests, ${proxy.counts.throttled - before.throttled} 429s`,
      );
    }, 15_000);
    await Promise.all(
      sources.map(async (s) => {
        await sleep(s.startMs);
        if (s.everyMs) {
          for (let i = 0; i < s.payments; i++) {
            const next = Date.now() + s.everyMs;
            await send(s.name);
            await sleep(Math.max(0, next - Date.now()));
          }
        } else {
          let left = s.payments;
          await Promise.all(
            Array.from({ length: 16 }, async () => {
              while (left-- > 0) await send(s.name);
            }),
          );
        }
      }),
    );
    const deadline = Date.now() + 20 * 60_000;
    while ([...payments.values()].some((p) => !p.outcomeAt) && Date.now() < deadline) await sleep(200);
    clearInterval(progress);
    clearInterval(sampler);
    await sleep(3000); // a duplicate outcome, if any, has time to show
    const requests = proxy.counts.requests - before.requests;
    const figures: Record<string, number | string> = {};
    const bySource: Record<string, Payment[]> = {};
    for (const p of payments.values()) (bySource[p.source] ??= []).push(p);
    for (const s of sources) {
      const mine = bySource[s.name]!;
      const l = latencies(mine);
      figures[`${label}: ${s.name} (${s.payments}, weight ${s.weight}) latency p50 / p99 / max, s`] =
        `${percentile(l, 50).toFixed(1)} / ${percentile(l, 99).toFixed(1)} / ${(l.at(-1) ?? NaN).toFixed(1)}`;
      if (!s.everyMs) {
        const first = Math.min(...mine.map((p) => p.sentAt));
        const last = Math.max(...mine.map((p) => p.outcomeAt ?? NaN));
        const seconds = (last - first) / 1000;
        const minimum = (s.payments / LIMIT) * 60;
        figures[`${label}: ${s.name} burst time, s (minimum N/${LIMIT} min: ${minimum.toFixed(0)} s)`] =
          `${seconds.toFixed(1)} (${(seconds / minimum).toFixed(2)}×)`;
      }
    }
    const weightOf = (name: string) => sources.find((s) => s.name === name)?.weight ?? 1;
    const busy = busyWindow(bySource, weightOf);
    const served = Object.values(busy.served).reduce((a, b) => a + b, 0);
    figures[`${label}: busy window (every source waiting), s`] = ((busy.to - busy.from) / 1000).toFixed(1);
    figures[`${label}: writes in the busy window by source`] = sources
      .map(
        (s) =>
          `${s.name} ${busy.served[s.name]} (${((100 * busy.served[s.name]!) / Math.max(1, served)).toFixed(1)} %)`,
      )
      .join(', ');
    // The seconds in which every source had a command waiting for a slot (from /metrics): the
    // budget decided who went next; its shares of the window then, and the writes in those seconds.
    const contended = samples.filter((x) => sources.every((s) => (x.waiting[s.name] ?? 0) > 0));
    if (contended.length > 0) {
      const inContended = (t: number) => contended.some((x) => t > x.at - 1000 && t <= x.at);
      const writesThen = Object.fromEntries(
        sources.map((s) => [
          s.name,
          bySource[s.name]!.filter((p) => p.outcomeAt && inContended(p.outcomeAt)).length,
        ]),
      );
      const allThen = Object.values(writesThen).reduce((a, b) => a + b, 0);
      const usedSum = (name: string) => contended.reduce((a, x) => a + (x.used[name] ?? 0), 0);
      const usedAll = sources.reduce((a, s) => a + usedSum(s.name), 0);
      figures[`${label}: seconds in which every source had commands waiting for a slot (/metrics)`] =
        contended.length;
      figures[
        `${label}: in those seconds, each source's share of the window's requests (/metrics) / of the writes`
      ] = sources
        .map(
          (s) =>
            `${s.name} ${((100 * usedSum(s.name)) / Math.max(1, usedAll)).toFixed(1)} % / ${((100 * writesThen[s.name]!) / Math.max(1, allThen)).toFixed(1)} %`,
        )
        .join(', ');
    } else figures[`${label}: seconds in which every source had commands waiting for a slot (/metrics)`] = 0;
    figures[`${label}: Jain's fairness index over the busy window (served / weighted max-min share)`] =
      busy.jain;
    figures[
      `${label}: Partner requests per payment (${requests} requests, ${proxy.counts.writes - before.writes} writes)`
    ] = requests / total;
    figures[`${label}: 429 answers`] = proxy.counts.throttled - before.throttled;
    const ours = new Set(payments.keys());
    const mineEnrollments = new Set([...ours].map((id) => enrollmentOf.get(id)));
    let applied = 0;
    let twice = 0;
    for (const r of await control.records('enrollments')) {
      if (!mineEnrollments.has(String(r.id))) continue;
      const n = (r.rental_payments as unknown[]).length;
      if (n > 0) applied++;
      if (n > 1) twice += n - 1;
    }
    const outcomeCounts = [...ours].map((id) => outcomes.get(id) ?? 0);
    figures[`${label}: payments applied / sent, applied twice, outcomes missing / duplicated`] =
      `${applied} / ${total}, ${twice}, ${outcomeCounts.filter((n) => n === 0).length} / ${outcomeCounts.filter((n) => n > 1).length}`;
    return figures;
  } finally {
    clearInterval(progress);
    clearInterval(sampler);
    if (child.exitCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
    await reader.disconnect().catch(() => undefined);
    const admin = kafka.admin();
    await admin.connect();
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    await admin.deleteTopics({ topics: mine }).catch(() => undefined);
    await admin.disconnect();
    await db.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`).catch(() => undefined);
    await db.end();
    await new Promise((r) => proxy.server.close(r));
    await sandbox.close();
  }
}

export async function run(): Promise<BenchResult> {
  // A smaller run to try the bench out (BENCH_FAIRNESS_SCALE=0.1); the goals are at 1.
  const scale = Number(process.env.BENCH_FAIRNESS_SCALE ?? 1);
  const names = (process.env.BENCH_FAIRNESS_SCENARIOS ?? 'small,weighted').split(',');
  const variant = process.env.BENCH_FAIRNESS_ROOT ? `code of ${ROOT}` : 'this checkout';
  const figures: Record<string, number | string> = {};
  for (const name of names) {
    const sources = SCENARIOS[name];
    if (!sources) throw new Error(`unknown scenario ${name}; known: ${Object.keys(SCENARIOS).join(', ')}`);
    const scaled = sources.map((s) => ({ ...s, payments: Math.max(1, Math.round(s.payments * scale)) }));
    Object.assign(
      figures,
      await scenario(
        `${name} (${variant}${scale === 1 ? '' : `, scale ${scale}`}${LIMIT === 650 ? '' : `, ${LIMIT}/min`})`,
        scaled,
      ),
    );
  }
  return {
    name: 'fairness',
    figures,
    notes: [
      `rentbridge start (${variant}) behind a recording proxy, the sandbox at ${LIMIT}/min; each payment its own enrollment; latency from just before its webhook to its outcome on Kafka.`,
      'Minimum of a burst: N / 650 minutes (the budget at its rate). Requests per payment: every /partner/v1 request through the proxy during the scenario, over its payments (the poller passed once before, outside the measure).',
    ],
  };
}
