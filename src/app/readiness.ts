import type { Admin } from 'kafkajs';
import type { Db } from '../db/prisma.js';
import { pendingMigrations } from '../db/migrate.js';
import { metrics } from '../metrics.js';
import { backlog, oldestUnpublished } from '../outbox/outbox-reader.js';
import { exposeRelayMetrics } from '../relay/relay-metrics.js';
import type { Runtime } from './runtime.js';

/**
 * The relay makes progress: the oldest unpublished outbox row (parked rows apart) is younger
 * than `stallSeconds`. Read from the outbox itself, so it tells the truth whichever process
 * runs the relay, and even when none does. Sets rentbridge_relay_stalled as well.
 */
export async function relayProgressCheck(db: Db, stallSeconds: number): Promise<true | string> {
  exposeRelayMetrics();
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
 * One role's part of /readyz (the relay, the poller, a consumer): whether its own work goes on,
 * and what it shows of that work. The composition root collects one per role a process runs.
 */
export interface RoleCheck {
  /** Its key in /readyz: `relay`, `poller`, `consumer:<name>`. */
  readonly name: string;
  /** `true`, or why the role is not doing its work. */
  check(admin: Admin): Promise<true | string> | true | string;
  /** What /readyz shows beside the verdict (publisher or standby, passes, group and lag). */
  details?(admin: Admin): Promise<unknown> | unknown;
}

/**
 * The relay's readiness: the publisher is not ready while the oldest waiting row is older than
 * RELAY_STALL_SECONDS; a standby is ready (another process holds the lock and does the work), and
 * says so. Both show the backlog.
 */
export function relayRoleCheck(relay: { isPublisher(): boolean }, db: Db, stallSeconds: number): RoleCheck {
  return {
    name: 'relay',
    async check() {
      const progress = await relayProgressCheck(db, stallSeconds);
      return progress === true || !relay.isPublisher() ? true : progress;
    },
    async details() {
      const b = await backlog(db);
      return {
        state: relay.isPublisher() ? 'publishing' : 'standing by',
        backlog: b.count,
        parked: b.parked,
        oldestWaitingSeconds: b.oldest
          ? Math.max(0, Math.round((Date.now() - b.oldest.getTime()) / 1000))
          : 0,
      };
    },
  };
}

/**
 * What /readyz checks: PostgreSQL answers, Kafka answers, every migration is applied, every role
 * of the process has started, and each role's own work goes on (`roles`). Each check is bounded
 * so a hung dependency answers "not ready" instead of hanging the probe.
 */
export function createReadiness(
  runtime: Runtime,
  timeoutMs = 3000,
  extra: {
    writer?: { oldestWaitMs(): number; probe(): Promise<void> };
    roles?: () => { started: boolean; checks: readonly RoleCheck[] };
  } = {},
) {
  const admin = runtime.kafka.admin();
  let adminConnected = false;
  const connected = async (): Promise<Admin> => {
    if (!adminConnected) {
      await admin.connect();
      adminConnected = true;
    }
    return admin;
  };

  const within = <T>(p: Promise<T>): Promise<T> =>
    Promise.race([
      p,
      new Promise<T>((_, reject) =>
        setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs).unref(),
      ),
    ]);

  const check = async (fn: () => Promise<true | string> | true | string): Promise<true | string> => {
    try {
      return await within(Promise.resolve().then(fn));
    } catch (error) {
      return (error as Error).message;
    }
  };
  const roles = () => extra.roles?.() ?? { started: true, checks: [] };
  let migrated = false;

  return {
    async checks(): Promise<Record<string, true | string>> {
      const { config } = runtime;
      const { started, checks: roleChecks } = roles();
      const [postgres, kafka, migrations, storage, ...own] = await Promise.all([
        check(async (): Promise<true> => {
          await runtime.db.$queryRaw`SELECT 1`;
          return true;
        }),
        check(async (): Promise<true> => {
          await (await connected()).describeCluster();
          return true;
        }),
        check(async () => {
          // Once none is pending, none becomes pending while this process runs (its migrations
          // are the files it was built with): checked again only until then. Each check opens a
          // connection of its own and reads every file, which on a loaded machine after a crash
          // took over the 3 s bound and held /readyz at 503.
          if (migrated) return true;
          const pending = await pendingMigrations(runtime.config.DATABASE_URL);
          migrated = pending.length === 0;
          return migrated ? true : `pending: ${pending.join(', ')}`;
        }),
        check(async () =>
          extra.writer
            ? storageCheck(extra.writer, Math.min(config.WEBHOOK_STORAGE_TIMEOUT_MS, timeoutMs))
            : true,
        ),
        ...roleChecks.map((role) => check(async () => role.check(await connected()))),
      ]);
      return {
        postgres,
        kafka,
        migrations,
        ...(extra.writer && { storage }),
        started: started || 'the process is still starting its roles',
        ...Object.fromEntries(roleChecks.map((role, i) => [role.name, own[i]!])),
      };
    },
    /** Each role's details (an error's message when they cannot be read in time). */
    async details(): Promise<Record<string, unknown>> {
      const roleChecks = roles().checks.filter((role) => role.details);
      const got = await Promise.all(
        roleChecks.map(async (role) => {
          try {
            return await within(Promise.resolve().then(async () => role.details!(await connected())));
          } catch (error) {
            return { error: (error as Error).message };
          }
        }),
      );
      return Object.fromEntries(roleChecks.map((role, i) => [role.name, got[i]]));
    },
    async close() {
      if (adminConnected) await admin.disconnect();
    },
  };
}
