import type { Db } from './db/prisma.js';
import { pendingMigrations } from './db/migrate.js';
import { metrics } from './metrics.js';
import { oldestUnpublished } from './relay/outbox-reader.js';
import type { Runtime } from './runtime.js';

/**
 * The relay makes progress: the oldest unpublished outbox row (parked rows apart) is younger
 * than `stallSeconds`. Read from the outbox itself, so it tells the truth whichever process
 * runs the relay, and even when none does. Sets rentbridge_relay_stalled as well.
 */
export async function relayProgressCheck(db: Db, stallSeconds: number): Promise<true | string> {
  const oldest = await oldestUnpublished(db);
  const age = oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0;
  const stalled = age > stallSeconds;
  metrics.relayStalled.set(stalled ? 1 : 0);
  return stalled
    ? `not making progress: the oldest unpublished outbox row is ${Math.round(age)} s old (bound ${stallSeconds} s)`
    : true;
}

/**
 * Webhook storage answers in time: no write has waited longer than `timeoutMs`, and a read of
 * the receipts table through the writer's pool answers within it (a lock or a stalled server
 * fails it as it fails the writes, where `SELECT 1` would still pass).
 */
export async function storageCheck(
  writer: { oldestWaitMs(): number; probe(): Promise<void> },
  timeoutMs: number,
): Promise<true | string> {
  const waited = writer.oldestWaitMs();
  if (waited > timeoutMs) {
    return `webhook writes are waiting for PostgreSQL (oldest ${Math.round(waited)} ms, bound ${timeoutMs} ms)`;
  }
  try {
    await writer.probe();
    return true;
  } catch (error) {
    return `webhook storage is not answering: ${(error as Error).message}`;
  }
}

/**
 * What /readyz checks: PostgreSQL answers, Kafka answers, every migration is applied. Each
 * check is bounded so a hung dependency answers "not ready" instead of hanging the probe.
 */
export function createReadiness(
  runtime: Runtime,
  timeoutMs = 3000,
  extra: { writer?: { oldestWaitMs(): number; probe(): Promise<void> } } = {},
) {
  const admin = runtime.kafka.admin();
  let adminConnected = false;

  const within = <T>(p: Promise<T>): Promise<T> =>
    Promise.race([
      p,
      new Promise<T>((_, reject) =>
        setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs).unref(),
      ),
    ]);

  const check = async (fn: () => Promise<true | string>): Promise<true | string> => {
    try {
      return await within(fn());
    } catch (error) {
      return (error as Error).message;
    }
  };

  return {
    async checks(): Promise<Record<string, true | string>> {
      const { config } = runtime;
      const [postgres, kafka, migrations, relay, storage] = await Promise.all([
        check(async () => {
          await runtime.db.$queryRaw`SELECT 1`;
          return true;
        }),
        check(async () => {
          if (!adminConnected) {
            await admin.connect();
            adminConnected = true;
          }
          await admin.describeCluster();
          return true;
        }),
        check(async () => {
          const pending = await pendingMigrations(runtime.config.DATABASE_URL);
          return pending.length === 0 ? true : `pending: ${pending.join(', ')}`;
        }),
        check(() => relayProgressCheck(runtime.db, config.RELAY_STALL_SECONDS)),
        check(async () =>
          extra.writer
            ? storageCheck(extra.writer, Math.min(config.WEBHOOK_STORAGE_TIMEOUT_MS, timeoutMs))
            : true,
        ),
      ]);
      return { postgres, kafka, migrations, relay, storage };
    },
    async close() {
      if (adminConnected) await admin.disconnect();
    },
  };
}
