import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';

/**
 * `n` active enrollments without payments on the sandbox, 1,000 per request; their ids. Used by the
 * snapshot-budget test (test/guard/snapshot-budget.test.ts) and the write-budget bench
 * (bench/write-budget.ts, bench/writes-650.ts).
 */
export async function addEnrollments(control: SandboxControl, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, n - i) }, () => ({
      status: 'active',
      rental_payments: [],
    }));
    ids.push(...(await control.addRecords('enrollments', batch)).map((r) => Number(r.id)));
  }
  return ids;
}
