import { isResource, RESOURCES } from '../../partner/resources.js';
import type { PassSummary } from '../../poller/index.js';
import { createCompositionRoot } from '../../app/composition-root.js';
import { loadConfigOrExit, UsageError } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

/**
 * `rentbridge poll --once [--resource R]`: one pass over every resource (or one), a summary on
 * stdout, exit 1 when a pass failed. An unknown resource is a usage error (exit 2).
 */
export async function pollOnce(opts: { resource?: string }): Promise<void> {
  const resource = opts.resource;
  if (resource !== undefined && !isResource(resource)) {
    throw new UsageError(`unknown resource "${resource}"; valid resources: ${RESOURCES.join(', ')}`);
  }
  const root = createCompositionRoot(loadConfigOrExit());
  await requireMigrated(root.config.DATABASE_URL, root.logger);
  const poller = root.poller();
  try {
    const summaries = await poller.runOnce(resource);
    process.stdout.write(formatSummary(summaries));
    if (summaries.some((s) => s.outcome === 'failed')) process.exitCode = 1;
  } finally {
    await poller.stop();
    await root.close();
  }
}

export function formatSummary(summaries: PassSummary[]): string {
  const header = ['resource', 'outcome', 'pages', 'records', 'changes', 'removed', 'requests', 'seconds'];
  const rows = summaries.map((s) => [
    s.resource,
    s.outcome,
    String(s.stats?.pages ?? '-'),
    String(s.stats?.records ?? '-'),
    String(s.stats?.changes ?? '-'),
    String(s.stats?.removed ?? '-'),
    String(s.stats?.requests ?? '-'),
    s.stats ? (s.stats.elapsedMs / 1000).toFixed(1) : '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const errors = summaries.filter((s) => s.error).map((s) => `${s.resource}: ${s.error}`);
  return [line(header), ...rows.map(line), ...errors].join('\n') + '\n';
}
