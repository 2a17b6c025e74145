import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { PollerPartner } from '../../src/poller/partner-port.js';
import { runResourcePass } from '../../src/poller/resource-pass.js';
import { useTestDatabase } from '../support/db.js';

/**
 * A pass's progress lines say how long it has run (issue 54: the customer issues' lines, one
 * request per customer, said elapsedMs=0 for passes of seconds).
 */
describe('the poller pass progress line of customer issues', () => {
  const database = useTestDatabase();

  it('carries the elapsed time measured, not the 0 the pass started with', async () => {
    await database.sql.query(
      `INSERT INTO known_records (resource, record_id, updated_at)
       SELECT 'customers', 'c' || lpad(i::text, 3, '0'), '2026-11-01' FROM generate_series(1, 20) i`,
    );
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger(
      { level: 'info' },
      {
        write(chunk: string) {
          for (const line of chunk.split('\n').filter(Boolean)) lines.push(JSON.parse(line) as never);
        },
      },
    );
    // Each customer's issues take a few milliseconds to come: the pass takes measurable time.
    const partner = {
      customerIssues: async () => {
        await new Promise((r) => setTimeout(r, 5));
        return { data: { issues: [] }, status: 200, requestId: 'r', headers: new Headers() };
      },
    } as unknown as PollerPartner;
    await runResourcePass({
      partner,
      db: database.db,
      logger,
      resource: 'customer_issues',
      backfillFrom: null,
      progressEveryPages: 1,
      perPage: 1000,
      now: () => new Date(),
      hooks: {},
      isStopping: () => false,
    });
    const progress = lines.filter((l) => l.msg === 'poller pass progress');
    expect(progress.map((l) => l.pages)).toEqual([10, 20]);
    for (const line of progress) expect(line.elapsedMs as number).toBeGreaterThanOrEqual(50);
    expect(progress[1]!.elapsedMs as number).toBeGreaterThan(progress[0]!.elapsedMs as number);
  });
});
