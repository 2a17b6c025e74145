import type { StageStatus } from './stage-rules.js';
import type { MinuteCount } from './overview-repository.js';

/** The overview's shapes (GET /ops/api/overview) and the helpers its stages share. */

export interface Series {
  name: string;
  /** One value per minute of `Overview.minutes`; null where nothing is known for that minute. */
  values: Array<number | null>;
}

export interface Chart {
  title: string;
  unit?: string;
  /**
   * `count` (the default): what happened during each minute. `level`: how things stood at the end
   * of each minute (the last point: now), e.g. the outbox backlog.
   */
  kind?: 'count' | 'level';
  series: Series[];
}

export interface Stage {
  id: 'receiver' | 'outbox' | 'relay' | 'kafka' | 'consumers' | 'partner' | 'poller' | 'dead-letters';
  title: string;
  status: StageStatus;
  /** Why the status, in a few words. */
  note: string;
  figures: Array<{ label: string; value: string | number }>;
  /** Its one figure on the overview's band (src/ops/overview/key-figures.ts). */
  key?: { label: string; value: string | number };
  charts: Chart[];
}

export function minuteAxis(now: number): number[] {
  const last = Math.floor(now / 60000) * 60;
  return Array.from({ length: 60 }, (_, i) => last - (59 - i) * 60);
}

/** Rows `{t, n, ...}` grouped by `keyOf` into series aligned on `minutes`. */
export function seriesBy<R extends MinuteCount>(
  rows: R[],
  minutes: number[],
  keyOf: (r: R) => string,
  value: (r: R) => number = (r) => r.n,
  combine: (a: number, b: number) => number = (a, b) => a + b,
): Array<{ name: string; values: number[] }> {
  const index = new Map(minutes.map((m, i) => [m, i]));
  const out = new Map<string, number[]>();
  for (const r of rows) {
    const i = index.get(r.t);
    if (i === undefined) continue;
    const key = keyOf(r);
    const values =
      out.get(key) ??
      out
        .set(
          key,
          minutes.map(() => 0),
        )
        .get(key)!;
    values[i] = combine(values[i]!, value(r));
  }
  return [...out.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, values]) => ({ name, values }));
}

export const sum = (series: Series[]): number =>
  series.reduce((s, x) => s + x.values.reduce<number>((a, b) => a + (b ?? 0), 0), 0);

export function fmtAge(seconds: number | null): string {
  if (seconds == null) return '–';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}
