import { csvCell } from '../csv-cell.js';
import { maskPersonal } from '../personal-data.js';
import { terminalSafe } from '../terminal-text.js';
import type { RunRecord } from './reconcile-repository.js';
import { RECONCILE_VERDICTS, isDrift, type ReconcileItem } from './reconcile-types.js';

/** How `rentbridge reconcile` prints a run: a table for people, JSON or CSV for scripts. */
export const REPORT_FORMATS = ['table', 'json', 'csv'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

const COLUMNS = [
  'verdict',
  'command_type',
  'source',
  'command_id',
  'target_id',
  'command_state',
  'reason',
] as const;

function cells(item: ReconcileItem): string[] {
  return [
    item.verdict,
    item.commandType,
    item.source ?? '',
    item.commandId ?? '',
    item.targetId,
    item.commandState ?? '',
    item.reason,
  ];
}

function table(run: RunRecord, items: ReconcileItem[]): string {
  const summary = RECONCILE_VERDICTS.filter((v) => (run.counts[v] ?? 0) > 0)
    .map((v) => `${v} ${run.counts[v]}`)
    .join(', ');
  const head = [
    `reconciliation run ${run.id}: ${run.since.toISOString()} .. ${run.until.toISOString()}` +
      `${run.source ? `, source ${run.source}` : ''}${run.commandType ? `, type ${run.commandType}` : ''}`,
    `${items.length} item(s): ${summary || 'nothing to reconcile'}; ${run.requests} Partner request(s)`,
  ];
  // The table lists what needs someone (drift) and what was settled; confirmed items are counted.
  const shown = items.filter((i) => i.verdict !== 'confirmed');
  if (shown.length === 0) return `${head.join('\n')}\n`;
  const rows = shown.map((item) => cells(item).map(terminalSafe));
  const widths = COLUMNS.map((c, i) => Math.min(60, Math.max(c.length, ...rows.map((r) => r[i]!.length))));
  const line = (cs: readonly string[]) =>
    cs
      .map((c, i) => (i === cs.length - 1 ? c : c.slice(0, widths[i]).padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [...head, '', line(COLUMNS), ...rows.map(line)].join('\n') + '\n';
}

/**
 * The report as written for a person or a file: personal values masked (a registration's target
 * is the tenant's e-mail; decision 052), CSV cells neutralised, table cells escaped.
 */
export function formatRun(run: RunRecord, given: ReconcileItem[], format: ReportFormat): string {
  const items = maskPersonal(given);
  if (format === 'json') {
    return `${JSON.stringify({ run, drift: items.some((i) => isDrift(i.verdict)), items }, null, 2)}\n`;
  }
  if (format === 'csv') {
    return [COLUMNS.join(','), ...items.map((i) => cells(i).map(csvCell).join(','))].join('\n') + '\n';
  }
  return table(run, items);
}
