/**
 * What `npm run bench -- history` measures (bench/history.ts): the command path's database work
 * and each read path, as the functions the consumer, the deliverer and the HTTP routes call.
 */
import { Registry } from 'prom-client';
import { createAttemptRecorder } from '../src/callbacks/attempt-recorder.js';
import {
  claimDue,
  insertDeliveries,
  listDeliveries,
  queueBySource,
} from '../src/callbacks/callback-repository.js';
import type { Db } from '../src/db/prisma.js';
import { countDeadLetters, searchDeadLetters } from '../src/dead-letters/dead-letter-repository.js';
import { traceId } from '../src/event-trace/trace.js';
import { createCommandRepository } from '../src/guard/store/command-repository.js';
import { SnapshotRing } from '../src/ops/overview/metric-samples.js';
import { buildOverview } from '../src/ops/overview/overview.js';
import { createCommandStatusRepository } from '../src/pms/command-status-repository.js';

export type Path = [string, (db: Db, i: number) => Promise<unknown>];

let commandSeq = 0;
/**
 * One command's database work on the command path, as the consumer and the callbacks' deliverer do
 * it: the guard's rows, then its outcome's callback queued, taken and recorded delivered.
 */
export async function commandPath(db: Db): Promise<void> {
  const id = {
    source: 'acme',
    commandType: 'rental_payment' as const,
    commandId: `bench-${process.pid}-${++commandSeq}`,
  };
  const guard = createCommandRepository(db);
  await guard.ensure({ ...id, targetId: `enr_${commandSeq % 5000}`, payload: { amount_cents: 120000 } });
  const requestId = `${id.commandId}.a1`;
  await guard.beginWrite(id, {
    attempt: 1,
    requestId,
    snapshot: { status: 'active', updated_at: new Date().toISOString() } as never,
  });
  await guard.applied(id, 1, 201);
  await guard.recordOutcome(id, { status: 'applied' } as never, `outcome.${id.commandId}.applied`);
  await insertDeliveries(db, [
    {
      source: 'acme',
      webhookId: `msg_${id.commandId}`,
      eventId: id.commandId,
      eventType: 'rentbridge.outcome',
      commandType: 'rental_payment',
      commandId: id.commandId,
      outcomeStatus: 'applied',
      payload: '{}',
    },
  ]);
  // The fill's deliveries are delivered or dead, so the one due for the source is this one.
  const [delivery] = await claimDue(db, 'acme', 1, 30_000);
  if (!delivery) throw new Error('bench history: the callback just queued is not due');
  await createAttemptRecorder(db).record({
    deliveryId: delivery.id,
    url: 'https://pms.example/outcomes',
    attempt: { result: 'delivered', httpStatus: 200, durationMs: 40, error: null },
    next: { state: 'delivered', nextAttemptAt: null, failures: 0 },
  });
}

/** Each read path (and the command path first), by name; `i` picks the ids looked up. */
export function paths(eventId: string, letterId: string): Path[] {
  const trace = (id: (i: number) => string) => (db: Db, i: number) =>
    traceId(db, id(i), { topicPrefix: '', retentionHours: 72 });
  const status = (db: Db) => createCommandStatusRepository(db);
  return [
    ['command path (guard rows + callback)', (db) => commandPath(db)],
    ['PMS status of one command', (db, i) => status(db).byId('acme', `h-pay-${3 * i + 3}`)],
    [
      'PMS command list, last hour',
      (db) => status(db).list('acme', { since: new Date(Date.now() - 3_600_000), limit: 100 }),
    ],
    ['trace by command id', trace((i) => `h-pay-${i + 1}`)],
    ['trace by Partner request id', trace((i) => `h-pay-${i + 1}.a1`)],
    ['trace by webhook id', trace((i) => `h-ob-${i + 1}`)],
    ['trace by CloudEvent id', trace(() => eventId)],
    ['trace by record id', trace((i) => `h_rec_${i + 1}`)],
    ['trace by dead-letter id', trace(() => letterId)],
    [
      'overview refresh',
      (db) => buildOverview({ db, registry: new Registry(), ring: new SnapshotRing(), topicPrefix: '' }),
    ],
    [
      'dead-letter list (open) and counts',
      async (db) => {
        await searchDeadLetters(db, { state: 'open', limit: 100 });
        await countDeadLetters(db, { state: 'open' });
      },
    ],
    [
      "callbacks' status",
      async (db) => {
        await queueBySource(db);
        await listDeliveries(db, { state: 'dead', limit: 50 });
      },
    ],
  ];
}
