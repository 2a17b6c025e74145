import { describe, expect, it } from 'vitest';
import { p99Ratio, report } from '../../bench/history-figures.js';

/**
 * The history bench's verdict (issue 42: "every p99 within 1.2× of the empty database"): the p99
 * ratio and the interval it is reported with, on latencies whose answer is known.
 */
function latencies(n: number, seed: number, scale = 1): number[] {
  // A fast body and a long tail, as the paths' own: 1 ms most of the time, up to 20 ms now and then.
  let a = seed;
  const next = () => (a = (a * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: n }, () => scale * (1 + (next() < 0.03 ? 19 * next() : 0.5 * next())));
}

describe('the history bench verdict', () => {
  it('finds no difference between two samplings of the same latencies, and says how far it may move', () => {
    const r = p99Ratio(latencies(3000, 1), latencies(3000, 2));
    expect(r.low).toBeLessThanOrEqual(1);
    expect(r.high).toBeGreaterThanOrEqual(1);
    expect(r.low).toBeLessThanOrEqual(r.ratio);
    expect(r.ratio).toBeLessThanOrEqual(r.high);
    expect(r.ratio).toBeGreaterThan(0.8);
    expect(r.ratio).toBeLessThan(1.25);
  });

  it('names a path whose year is 1.5× slower, with an interval wholly over 1.2', () => {
    const over: string[] = [];
    const figures: Record<string, string | number> = {};
    report(figures, 'slow path', latencies(5000, 3), latencies(5000, 4, 1.5), over);
    report(figures, 'flat path', latencies(5000, 5), latencies(5000, 5), over);
    expect(over).toEqual(['slow path']);
    const [ratio, low, high] = String(figures['slow path: p99 filled / empty (90% interval)'])
      .match(/[\d.]+/g)!
      .map(Number);
    expect(ratio).toBeGreaterThan(1.3);
    expect(low).toBeGreaterThan(1.2);
    expect(high).toBeGreaterThanOrEqual(ratio!);
    expect(String(figures['flat path: p99 filled / empty (90% interval)'])).toMatch(/^1\.00 \(/);
  });

  it('narrows the interval as the samples grow', () => {
    const width = (n: number) => {
      const r = p99Ratio(latencies(n, 7), latencies(n, 8));
      return r.high - r.low;
    };
    expect(width(5_000)).toBeLessThan(width(200) / 2);
  });
});
