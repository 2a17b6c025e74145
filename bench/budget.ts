/**
 * `npm run bench -- budget`: 3 processes share one rate budget (PostgreSQL) of L requests per
 * minute against a sandbox limited to L, for a fixed time. Figures: requests per minute achieved
 * as a fraction of L, 429s received, p50/p99 wait for a slot per lane.
 * Env: BENCH_BUDGET_SECONDS (120), BENCH_BUDGET_LIMIT (120), DATABASE_URL.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { migrate } from '../src/db/migrate.js';
import { createSandboxControl, startSandbox } from '../src/sandbox/index.js';
import type { BenchResult } from './types.js';

const run$ = promisify(execFile);
const WORKER = fileURLToPath(new URL('../test/partner/support/budget-worker.ts', import.meta.url));
const TSX = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url));

interface WorkerResult {
  requests: number;
  failures: number;
  statuses: Record<string, number>;
  waits: Record<string, number[]>;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function run(): Promise<BenchResult> {
  const seconds = Number(process.env.BENCH_BUDGET_SECONDS ?? 120);
  const limit = Number(process.env.BENCH_BUDGET_LIMIT ?? 120);
  const base = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
  const schema = `bench_budget_${randomBytes(4).toString('hex')}`;
  const url = withSchema(base, schema);
  await migrate(url);
  const sandbox = await startSandbox({ port: 0 });
  await createSandboxControl(sandbox.url).setConfig({ rate_limit_per_minute: limit });
  // Process 1 polls, process 2 reads back, process 3 writes (its lane) and polls: 2 loops each.
  const laneSets = ['poll,poll', 'readback,poll', 'write,poll'];
  console.log(`budget bench: 3 processes, L=${limit}/min, ${seconds} s`);
  try {
    const started = Date.now();
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
    const elapsedMin = (Date.now() - started) / 60_000;
    const statuses: Record<string, number> = {};
    const waits: Record<string, number[]> = {};
    for (const r of results) {
      for (const [s, n] of Object.entries(r.statuses)) statuses[s] = (statuses[s] ?? 0) + n;
      for (const [lane, w] of Object.entries(r.waits)) (waits[lane] ??= []).push(...w);
    }
    const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
    const perMinute = answered / (seconds / 60);
    const figures: Record<string, number | string> = {
      limit_per_minute: limit,
      seconds,
      processes: 3,
      requests_answered: answered,
      requests_per_minute: Number(perMinute.toFixed(1)),
      fraction_of_limit: Number((perMinute / limit).toFixed(3)),
      throttled_429: statuses['429'] ?? 0,
      failures: results.reduce((a, r) => a + r.failures, 0),
      wall_minutes: Number(elapsedMin.toFixed(2)),
    };
    for (const lane of ['write', 'readback', 'poll']) {
      const w = waits[lane] ?? [];
      figures[`${lane}_slots`] = w.length;
      figures[`${lane}_wait_p50_ms`] = Math.round(percentile(w, 50));
      figures[`${lane}_wait_p99_ms`] = Math.round(percentile(w, 99));
    }
    console.log(figures);
    return {
      name: 'budget',
      figures,
      notes: [
        'Every request counted (authenticate included): the sandbox limits /partner/v1/* per source IP over a rolling 60 s window.',
        'The budget window is 61 s (1 s safety margin), so the best possible steady rate is L * 60/61 ≈ 98.4% of L; the first window starts full.',
        'Waits include the time a slot is held back for a higher lane; poll leaves 2% of the window to writes and read-backs.',
      ],
    };
  } finally {
    await sandbox.close();
    const { connectionString } = parseDatabaseUrl(base);
    const admin = new pg.Client({ connectionString });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await admin.end();
  }
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
