import { hostname } from 'node:os';
import type { Db } from '../db/prisma.js';
import { commandContracts } from '../contracts/command-contracts.js';
import type { Logger } from '../logger.js';
import { exposeMetrics, scrapeHooks } from '../metrics.js';

/**
 * Which roles are running: each role process reports the roles it runs every HEARTBEAT_SECONDS
 * (one row per role and process in `role_heartbeats`). A role with no report for
 * ROLE_GONE_SECONDS has no process running it: the console says "not running" rather than "idle",
 * and rentbridge_role_last_seen_seconds (on the process serving the console) feeds the alert
 * RentbridgeRoleNotRunning.
 */
export const HEARTBEAT_SECONDS = 10;
/** Three reports missed. */
export const ROLE_GONE_SECONDS = 3 * HEARTBEAT_SECONDS;

/**
 * The roles a deployment runs, every one needed for the flow (docs/design.md): a consumer per
 * command type (`consumer:<name>`, from the list of command types) among the others.
 */
export const EXPECTED_ROLES: readonly string[] = [
  'http',
  'relay',
  'poller',
  ...commandContracts().map((c) => `consumer:${c.name}`),
  'dead-letters',
];

/** A component (src/app/lifecycle.ts's shape) that reports the given roles while it runs. */
export function createRoleHeartbeat(deps: { db: Db; logger: Logger; roles: () => string[] }): {
  name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
} {
  const instance = `${hostname()}:${process.pid}`;
  let timer: NodeJS.Timeout | undefined;
  const report = async () => {
    const roles = deps.roles().filter((r) => EXPECTED_ROLES.includes(r));
    if (roles.length === 0) return;
    await deps.db.$executeRaw`
      INSERT INTO role_heartbeats (role, instance, seen_at)
      SELECT unnest(${roles}::text[]), ${instance}, now()
      ON CONFLICT (role, instance) DO UPDATE SET seen_at = now()`;
  };
  return {
    name: 'heartbeat',
    async start() {
      await report();
      timer = setInterval(() => {
        // A missed report is harmless (the next one comes in seconds); PostgreSQL away is told elsewhere.
        report().catch((err: unknown) => deps.logger.debug({ err }, 'role heartbeat not written'));
      }, HEARTBEAT_SECONDS * 1000);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      // Stopped on purpose: no longer running, at once.
      await deps.db.$executeRaw`DELETE FROM role_heartbeats WHERE instance = ${instance}`.catch(
        () => undefined,
      );
    },
  };
}

/** Seconds since each expected role last reported (null: never, or not for an hour). */
export async function roleLastSeen(db: Db): Promise<Map<string, number | null>> {
  const rows = await db.$queryRaw<Array<{ role: string; age: number }>>`
    SELECT role, extract(epoch FROM now() - max(seen_at))::float8 AS age
      FROM role_heartbeats WHERE seen_at > now() - interval '1 hour' GROUP BY role`;
  const seen = new Map<string, number | null>(EXPECTED_ROLES.map((r) => [r, null]));
  for (const r of rows) if (seen.has(r.role)) seen.set(r.role, Math.max(0, Math.round(r.age)));
  return seen;
}

/**
 * rentbridge_role_last_seen_seconds{role} (src/metrics.ts), filled in by the process serving the
 * console: read from PostgreSQL at scrape time; a role never seen within the hour reads 3600.
 */
export function reportRolesOnScrape(db: Db): void {
  exposeMetrics('roles');
  scrapeHooks.roleLastSeen = async (set) => {
    const seen = await roleLastSeen(db).catch(() => null);
    if (!seen) return;
    for (const [role, age] of seen) set(role, age ?? 3600);
  };
}
