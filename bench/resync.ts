/**
 * `npm run bench -- resync` (issue 29): `rentbridge resync` of one collection of 10,000 and of
 * 100,000 records (BENCH_RESYNC_RECORDS, comma-separated) in the sandbox over HTTP, on the shared
 * rate budget in PostgreSQL at the sandbox's own limit (650/min): its time and its Partner API
 * requests against the minimum, one request per 1,000 records. The resync's reading and its rows
 * into the outbox; the relay's publishing is measured by `npm run bench -- relay`.
 */
import { createRequestCounter } from '../src/poller/index.js';
import { createResync } from '../src/resync/resync.js';
import { withSandboxBench } from './sandbox-bench.js';
import type { BenchResult } from './types.js';

const RESOURCE = 'leads' as const;
const CHUNK = 2000;

export async function run(): Promise<BenchResult> {
  const sizes = (process.env.BENCH_RESYNC_RECORDS ?? '10000,100000').split(',').map(Number);
  const figures: Record<string, number | string> = {};
  for (const total of sizes) {
    await withSandboxBench('resync', async ({ db, logger, control, requests, partner: clientOf }) => {
      for (let done = 0; done < total; done += CHUNK) {
        await control.addRecords(
          RESOURCE,
          Array.from({ length: Math.min(CHUNK, total - done) }, (_, i) => ({
            name: `lead ${done + i}`,
            status: 'open',
            created_at: '2026-01-01T00:00:00Z',
            updated_at: '2026-01-02T00:00:00Z',
          })),
        );
      }
      // The sandbox's own limit: the resync must keep to the poll lane of it.
      const partner = clientOf((f) => createRequestCounter(f).fetch);
      let lastLog = 0;
      const started = Date.now();
      const [result] = await createResync({
        partner,
        db,
        logger,
        onProgress: (p) => {
          if (Date.now() - lastLog < 5000) return;
          lastLog = Date.now();
          console.log(`resync ${total}: page ${p.pagesDone}/${p.pageCount}, ${p.records} records`);
        },
      }).run({ resource: RESOURCE });
      const seconds = (Date.now() - started) / 1000;
      const slots = await db.$queryRaw<{ lane: string; n: bigint }[]>`
        SELECT lane, count(*) AS n FROM rate_budget_slots GROUP BY lane ORDER BY lane`;
      const rows = await db.outboxMessage.count({ where: { source: `/resync/${RESOURCE}` } });
      const k = total >= 1000 ? `${total / 1000}k` : String(total);
      figures[`${k}_records_seconds`] = seconds;
      figures[`${k}_records_per_second`] = Math.round(total / seconds);
      figures[`${k}_partner_requests`] = requests();
      figures[`${k}_minimum_requests`] = Math.ceil(total / 1000);
      figures[`${k}_budget_slots`] = slots.map((s) => `${Number(s.n)} ${s.lane}`).join(', ');
      figures[`${k}_outbox_rows`] = rows;
      figures[`${k}_records_reported`] = result?.records ?? 0;
      console.log(`resync ${total}: ${requests()} requests, ${seconds.toFixed(1)} s, ${rows} outbox rows`);
    });
  }
  return {
    name: 'resync',
    figures,
    notes: [
      `One collection (${RESOURCE}), per_page 1000, rate budget 650/min in PostgreSQL; requests counted at the client's fetch (the API token's issue apart; its slot is the one write).`,
      'Time covers reading every page and writing its rows and position in one transaction each; publishing them is the relay bench.',
    ],
  };
}
