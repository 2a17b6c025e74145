import { terminalSafe } from '../terminal-text.js';
import type { Trace, TraceStep } from './trace.js';

/** `rentbridge trace` as text: one line per step (time, stage, what, ids), then where the trail ends. */
export function formatTrace(
  // Stages beyond the trace's own may be added (the outcome callbacks' `callback`).
  trace: Omit<Trace, 'steps'> & { steps: ReadonlyArray<Omit<TraceStep, 'stage'> & { stage: string }> },
): string {
  const lines: string[] = [`trace ${terminalSafe(trace.id)}`];
  if (trace.steps.length) {
    const rows = trace.steps.map((s) =>
      [
        s.at.replace('T', ' ').replace('Z', ''),
        s.stage,
        s.what,
        Object.entries(s.details)
          .filter(([, v]) => v != null && v !== '')
          .map(([k, v]) => `${k}=${String(v)}`)
          .join(' '),
      ].map(terminalSafe),
    );
    const header = ['time (UTC)', 'stage', 'what', 'ids and facts'];
    const widths = [0, 1, 2].map((i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) =>
      cells
        .map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c))
        .join('  ')
        .trimEnd();
    lines.push('', line(header), line(widths.map((w) => '-'.repeat(w)).concat('-------------')));
    for (const r of rows) lines.push(line(r));
  }
  lines.push('', 'where the trail ends:');
  for (const e of trace.ends) lines.push(`  - ${terminalSafe(e)}`);
  return lines.join('\n');
}
