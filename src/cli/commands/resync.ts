import { createCompositionRoot } from '../../app/composition-root.js';
import { isResource, RESOURCES } from '../../partner/resources.js';
import type { ResyncProgress } from '../../resync/resync.js';
import { partnerApiUrl } from '../demo-partner.js';
import { loadConfigOrExit, UsageError } from '../process.js';
import { requireMigrated } from '../require-migrated.js';
import { toolLogger } from '../tool-logger.js';

/**
 * `rentbridge resync [--resource R] [--restart]`: republishes the current state of every record
 * (src/resync/resync.ts). Progress on stderr, a summary on stdout; Ctrl-C stops it after the page
 * in hand, and the next run goes on from there (unless --restart). The relay publishes the rows.
 */
export async function resyncCommand(opts: { resource?: string; restart?: boolean }): Promise<void> {
  const resource = opts.resource;
  if (resource !== undefined && !isResource(resource)) {
    throw new UsageError(`unknown resource "${resource}"; valid resources: ${RESOURCES.join(', ')}`);
  }
  const config = loadConfigOrExit();
  const url = await partnerApiUrl(config, (line) => process.stderr.write(`resync: ${line}\n`));
  const root = createCompositionRoot(config, toolLogger(config));
  root.usePartnerUrl(url);
  await requireMigrated(root.config.DATABASE_URL, root.logger);
  let stopping = false;
  const onSignal = () => {
    stopping = true;
    process.stderr.write('resync: stopping after this page; run it again to go on from here\n');
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let lastLine = 0;
  const resync = root.resync({
    isStopping: () => stopping,
    onProgress: (p) => {
      const now = Date.now();
      if (now - lastLine < 2000 && p.tombstones === undefined) return;
      lastLine = now;
      process.stderr.write(`${progressLine(p)}\n`);
    },
  });
  try {
    const results = await resync.run({ ...(resource && { resource }), restart: opts.restart ?? false });
    process.stdout.write(formatResync(results, (r) => resync.requests(r)));
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await root.close();
  }
}

function progressLine(p: ResyncProgress): string {
  const of = p.pageCount ? `/${p.pageCount}` : '';
  return `resync ${p.resource}: page ${p.pagesDone}${of}, ${p.records} records, ${(p.elapsedMs / 1000).toFixed(1)} s${p.resumed ? ' (resumed)' : ''}`;
}

export function formatResync(
  results: ResyncProgress[],
  requests: (r: ResyncProgress['resource']) => number,
): string {
  const header = ['resource', 'records', 'pages', 'requests', 'tombstones', 'seconds', 'resumed'];
  const rows = results.map((p) => [
    p.resource,
    String(p.records),
    String(p.pagesDone),
    String(requests(p.resource)),
    String(p.tombstones ?? 0),
    (p.elapsedMs / 1000).toFixed(1),
    p.resumed ? 'yes' : 'no',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}
