/**
 * `npm run bench [-- name...]`: runs the benchmarks (all by default) against real servers and the
 * sandbox, prints their figures and writes a Markdown report to docs/benchmarks.md.
 * Figures, not tests: nothing here fails on a slow machine.
 */
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import type { BenchResult } from './types.js';

const BENCHES: Record<string, { module: string; what: string }> = {
  ingest: {
    module: './ingest.js',
    what: 'webhook ingest: durable acks/s and latency vs two baselines (issue 5)',
  },
  budget: {
    module: './budget.js',
    what: 'shared rate budget: lanes under a saturating poller (issue 15), 3 processes at limit L (issue 4)',
  },
  slots: {
    module: './slot-take.js',
    what: 'rate-budget slot wait when 13 poller passes and 4 consumers start together, before and after (issue 43)',
  },
  writes: {
    module: './write-budget.js',
    what: 'Partner requests per payment in a burst and at a trickle, before and after snapshots from stored reads (issue 43)',
  },
  writes650: {
    module: './writes-650.js',
    what: 'a month-end burst at the real 650/min (time vs N/650 min, 429s) and the unknown share under the fault mix, before and after (issue 43)',
  },
  fairness: {
    module: './fairness.js',
    what: "PMS sources of different sizes through one budget: a small source beside a month-end burst, two bursts weighted 3:1; latency per source, burst time vs its minimum, requests per payment, 429s, Jain's index (issue 52)",
  },
  sync: { module: './sync.js', what: 'poller: first and incremental pass over many records (issue 6)' },
  commands: {
    module: './commands.js',
    what: 'guarded writes vs unguarded, and at the 650/min limit (issue 7)',
  },
  overview: {
    module: './overview.js',
    what: 'console overview: cost of one refresh at 100k outbox rows (issue 19)',
  },
  callbacks: {
    module: './callbacks.js',
    what: 'outcome callbacks: delivered, duplicates, latency alone and beside a dead and a slow endpoint (issue 27)',
  },
  resync: {
    module: './resync.js',
    what: 'rentbridge resync of 10,000 and 100,000 records: time and Partner API requests vs one per 1,000 (issue 29)',
  },
  changelog: {
    module: './changelog.js',
    what: 'partner.* read from offset 0: compacted changelog vs the same changes kept by time (issue 29)',
  },
  history: {
    module: './history.js',
    what: 'a year of a large PMS in the tables: read paths and the command path, empty vs filled; storage per month; commands while a backlog is pruned (issue 42)',
  },
  erase: {
    module: './erase.js',
    what: 'rentbridge erase of one person from a year of a large PMS: time, pages touched and sequential scans, dry run and erasure (issue 51)',
  },
  reconcile: {
    module: './reconcile.js',
    what: 'rentbridge reconcile over a month of payments (10,000 over 3,000 enrollments), and the same month with its 3,000 registrations and enrollments: Partner requests vs the pages that hold them, and time (issue 45)',
  },
  path: {
    module: './payment-path.js',
    what: 'the files and folders of src/ one rental payment runs through, from its Kafka message to its outcome (V8 coverage; issue 40)',
  },
  'slow-record': {
    module: './slow-record.js',
    what: "other records' payments behind one record held 5 s, all in one partition: publish to outcome, one command at a time (the old order per partition) vs order per record (issue 52)",
  },
  relay: {
    module: './relay-drain.js',
    what: 'relay draining a 100k backlog vs a plain idempotent producer; command wait and receiver acks/s meanwhile (issue 33)',
  },
};

function machine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown cpu';
  const pg = (() => {
    try {
      return execFileSync('psql', ['--version']).toString().trim();
    } catch {
      return 'psql not found';
    }
  })();
  return `${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${pg}, Kafka 3.9 (scripts/kafka.sh)`;
}

function table(result: BenchResult): string {
  const rows = Object.entries(result.figures).map(
    ([k, v]) => `| ${k} | ${typeof v === 'number' ? round(v) : v} |`,
  );
  return ['| figure | value |', '|---|---|', ...rows].join('\n');
}

function round(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(Math.abs(n) < 10 ? 3 : 1);
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const unknown = asked.filter((n) => !BENCHES[n]);
  if (unknown.length > 0) {
    console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${Object.keys(BENCHES).join(', ')}`);
    process.exit(2);
  }
  const names = asked.length > 0 ? asked : Object.keys(BENCHES);
  const sections = new Map<string, string>();
  for (const name of names) {
    const bench = BENCHES[name]!;
    console.log(`\n=== bench ${name}: ${bench.what}`);
    const started = Date.now();
    // The machine may be shared: the load average says how far the figures can be trusted.
    const loadBefore = loadavg()[0]!.toFixed(1);
    try {
      const mod = (await import(bench.module)) as { run: () => Promise<BenchResult> };
      const result = await mod.run();
      console.log(table(result));
      sections.set(
        name,
        `## ${name}\n\n${bench.what}. Ran ${((Date.now() - started) / 1000).toFixed(0)} s on ${new Date().toISOString().slice(0, 10)}, load average ${loadBefore} before, ${loadavg()[0]!.toFixed(1)} after (${cpus().length} cores).\n\n${table(result)}\n${
          result.notes?.length ? `\n${result.notes.map((n) => `- ${n}`).join('\n')}\n` : ''
        }`,
      );
    } catch (error) {
      console.error(`bench ${name} failed:`, error);
      sections.set(name, `## ${name}\n\nFailed: ${(error as Error).message}\n`);
      process.exitCode = 1;
    }
  }
  // A run of some benchmarks keeps the other sections of the report as they were (with their date).
  const file = new URL('../docs/benchmarks.md', import.meta.url);
  const previous = await readFile(file, 'utf8').catch(() => '');
  const kept = new Map<string, string>();
  for (const part of previous.split(/^(?=## )/m).slice(1)) {
    const name = /^## (\S+)/.exec(part)?.[1];
    if (name && !sections.has(name)) kept.set(name, part.trimEnd() + '\n');
  }
  // Sections no bench writes (`cluster`, from `npm run test:cluster`) are kept too, after the benches'.
  const ordered = [...Object.keys(BENCHES), ...[...kept.keys()].filter((name) => !BENCHES[name])]
    .map((name) => sections.get(name) ?? kept.get(name))
    .filter((s): s is string => s !== undefined);
  const report = `# Benchmarks\n\nWritten by \`npm run bench\`; last run ${new Date().toISOString()} (${names.join(', ')}); other sections kept from earlier runs.\n\nMachine: ${machine()}.\n\n${ordered.join('\n')}`;
  await writeFile(file, report);
  console.log('\nreport written to docs/benchmarks.md');
}

await main();
