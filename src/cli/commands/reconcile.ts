import { createCompositionRoot } from '../../app/composition-root.js';
import { formatRun, REPORT_FORMATS, type ReportFormat } from '../../reconcile/reconcile-format.js';
import { RECONCILED_TYPES } from '../../reconcile/reconcile-repository.js';
import { isDrift, type ReconcileScope } from '../../reconcile/reconcile-types.js';
import { reconcilerOf } from '../../app/reconcile-role.js';
import { partnerApiUrl } from '../demo-partner.js';
import { loadConfigOrExit, UsageError } from '../process.js';
import { requireMigrated } from '../require-migrated.js';
import { toolLogger } from '../tool-logger.js';

export interface ReconcileCliOptions {
  since?: string;
  until?: string;
  source?: string;
  type?: string;
  format?: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function parseDate(name: string, value: string | undefined, fallback: Date): Date {
  if (value === undefined) return fallback;
  const at = /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : Date.parse(value);
  if (Number.isNaN(at))
    throw new UsageError(`--${name} "${value}" is not a date (2026-11-01 or 2026-11-01T08:00:00Z)`);
  return new Date(at);
}

/** The options as a scope and a format; a bad one is a UsageError (exit 2). */
export function parseReconcileOptions(
  opts: ReconcileCliOptions,
  now = new Date(),
): {
  scope: ReconcileScope;
  format: ReportFormat;
} {
  const format = (opts.format ?? 'table') as ReportFormat;
  if (!REPORT_FORMATS.includes(format)) {
    throw new UsageError(`--format must be one of ${REPORT_FORMATS.join(', ')}, not "${opts.format}"`);
  }
  if (opts.type !== undefined && !(RECONCILED_TYPES as readonly string[]).includes(opts.type)) {
    throw new UsageError(`--type must be one of ${RECONCILED_TYPES.join(', ')}, not "${opts.type}"`);
  }
  const until = parseDate('until', opts.until, now);
  const since = parseDate('since', opts.since, new Date(until.getTime() - DAY_MS));
  if (since >= until) throw new UsageError('--since must be before --until');
  return { scope: { since, until, source: opts.source, commandType: opts.type }, format };
}

/**
 * `rentbridge reconcile [--since] [--until] [--source] [--type] [--format]`: one pass
 * (src/reconcile/), its report on stdout; exit 0 when every item is confirmed (or settled applied),
 * 1 when drift is found, 2 on bad usage.
 */
export async function reconcile(opts: ReconcileCliOptions): Promise<void> {
  const { scope, format } = parseReconcileOptions(opts);
  const config = loadConfigOrExit();
  // Where the Partner API is, before the run is stored: a usage error is never a failed run.
  const url = await partnerApiUrl(config, (line) => process.stderr.write(`reconcile: ${line}\n`));
  const root = createCompositionRoot(config, toolLogger(config));
  root.usePartnerUrl(url);
  await requireMigrated(root.config.DATABASE_URL, root.logger);
  let drift = false;
  try {
    await root.ensureTopics();
    const { run, items } = await reconcilerOf(root).run(scope, 'cli');
    process.stdout.write(formatRun(run, items, format));
    drift = items.some((i) => isDrift(i.verdict));
  } finally {
    await root.close();
  }
  process.exitCode = drift ? 1 : 0;
}
