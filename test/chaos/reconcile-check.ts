import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type pg from 'pg';
import { RECONCILED_TYPES } from '../../src/reconcile/reconcile-repository.js';
import type { Check } from './invariants.js';

/**
 * The chaos run's last word on the platform (issue 45): `rentbridge reconcile` over the whole run,
 * as an operator runs it, then three checks on its items — every applied command is confirmed (or,
 * where the platform cannot show it, an item says why), every parked command is settled or
 * explained, and the platform holds no payment, customer or enrollment no command explains.
 */

const run = promisify(execFile);

interface Item {
  verdict: string;
  commandType: string;
  source: string | null;
  commandId: string | null;
  targetId: string;
  commandState: string | null;
  reason: string;
}

function check(name: string, checked: number, failures: string[]): Check {
  return {
    name,
    ok: failures.length === 0,
    checked,
    failures: failures.slice(0, 10),
    failureCount: failures.length,
  };
}

const describe = (i: Item) =>
  `${i.source}/${i.commandType}/${i.commandId ?? '-'} on ${i.targetId}: ${i.verdict} (${i.reason})`;

export async function reconcileAtEnd(options: {
  repoRoot: string;
  env: Record<string, string>;
  since: number;
  pool: pg.Pool;
  /** CHAOS_HIDE_PAYMENTS: the enrollment records carry no payments, so "unknown" is the honest verdict. */
  hidePayments: boolean;
}): Promise<{ checks: Check[]; figures: Record<string, number | string> }> {
  const started = Date.now();
  let stdout = '';
  let stderr = '';
  let exit = 0;
  try {
    ({ stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/main.ts',
        'reconcile',
        '--since',
        new Date(options.since - 60_000).toISOString(),
        '--format',
        'json',
      ],
      {
        cwd: options.repoRoot,
        env: { ...process.env, ...options.env, LOG_LEVEL: 'warn' },
        timeout: 600_000,
        maxBuffer: 256 * 2 ** 20,
      },
    ));
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    exit = typeof e.code === 'number' ? e.code : -1;
    stdout = e.stdout ?? '';
    stderr = e.stderr ?? '';
  }
  const parsed = stdout
    ? (JSON.parse(stdout) as { run: { requests: number; counts: Record<string, number> }; items: Item[] })
    : null;
  const items = parsed?.items ?? [];
  const ran = check(
    'reconcile: the pass ran (exit 0 or 1)',
    1,
    exit === 0 || exit === 1
      ? []
      : [`exit ${exit}: ${stderr.trim().split('\n').slice(-3).join(' | ') || '(nothing on stderr)'}`],
  );
  const applied = items.filter((i) => i.commandState === 'applied' || i.commandState === 'already_applied');
  const appliedOk = (i: Item) =>
    i.verdict === 'confirmed' ||
    // Two identical payments on one enrollment: the evidence cannot tell, and the item says so.
    i.verdict === 'ambiguous' ||
    (options.hidePayments && i.verdict === 'unknown');
  const parked = items.filter((i) => i.commandState === 'unverified');
  const { rows } = await options.pool.query<{ n: string }>(
    "SELECT count(*) AS n FROM commands WHERE state = 'unverified' AND command_type = ANY($1)",
    [[...RECONCILED_TYPES]],
  );
  // Settled ones are `applied` or `pending` now; those still parked must each have an item.
  const stillParked = Number(rows[0]?.n ?? 0);
  const unexplained = parked.filter((i) => !i.reason);
  const parkedItems = parked.length;
  const figures: Record<string, number | string> = {
    'reconcile exit': exit,
    'reconcile seconds': Number(((Date.now() - started) / 1000).toFixed(1)),
    'reconcile Partner requests': parsed?.run.requests ?? 0,
    ...Object.fromEntries(Object.entries(parsed?.run.counts ?? {}).map(([v, n]) => [`reconcile ${v}`, n])),
  };
  return {
    figures,
    checks: [
      ran,
      check(
        'reconcile: every applied command confirmed',
        applied.length,
        applied.filter((i) => !appliedOk(i)).map(describe),
      ),
      check('reconcile: every unverified command settled or explained', parkedItems, [
        ...unexplained.map(describe),
        ...(stillParked > parkedItems ? [`${stillParked} parked commands, ${parkedItems} items`] : []),
      ]),
      check(
        'reconcile: no payment, customer or enrollment on the platform that no command explains',
        items.length,
        items.filter((i) => i.verdict === 'unexpected').map(describe),
      ),
    ],
  };
}
