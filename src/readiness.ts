import { pendingMigrations } from './db/migrate.js';
import type { Runtime } from './runtime.js';

/**
 * What /readyz checks: PostgreSQL answers, Kafka answers, every migration is applied. Each
 * check is bounded so a hung dependency answers "not ready" instead of hanging the probe.
 */
export function createReadiness(runtime: Runtime, timeoutMs = 3000) {
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
      const [postgres, kafka, migrations] = await Promise.all([
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
      ]);
      return { postgres, kafka, migrations };
    },
    async close() {
      if (adminConnected) await admin.disconnect();
    },
  };
}
