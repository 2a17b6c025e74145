/** What every benchmark's `run()` returns; bench/run.ts prints it and writes docs/benchmarks.md. */
export interface BenchResult {
  name: string;
  figures: Record<string, number | string>;
  notes?: string[];
}
