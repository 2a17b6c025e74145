import { createRoleHeartbeat } from '../ops/role-heartbeat.js';
import type { Config } from '../config/config.js';
import { sourcesTrustEachOther, sourcesWithoutOwnKey } from '../config/source-isolation.js';
import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import { runUntilSignal, startInOrder, type Component } from './lifecycle.js';

/** What running roles needs of the composition root (src/app/composition-root.ts). */
export interface RolesRoot {
  readonly logger: Logger;
  readonly db: Db;
  readonly config: Config;
  markStarted(): void;
  close(): Promise<void>;
}

/**
 * Runs the roles a CLI command asks for until SIGTERM / SIGINT: `before` (topics, say), then
 * each role started in order; on a signal they stop in the reverse order and the root closes.
 */
export async function runRoles(
  root: RolesRoot,
  roles: () => Iterable<Component | (() => Promise<Component | null> | Component | null)>,
  options: { before?: () => Promise<void>; graceMs?: number } = {},
): Promise<void> {
  announceSharedKey(root);
  await runUntilSignal(
    root.logger,
    async () => {
      try {
        await options.before?.();
      } catch (error) {
        await root.close();
        throw error;
      }
      // Each role started reports itself (src/ops/role-heartbeat.ts): the console tells a role that
      // is not running from one that is idle.
      const names: string[] = [];
      const reported = [...roles()].map((entry) => async () => {
        const component = typeof entry === 'function' ? await entry() : entry;
        // A component that runs several roles at once (`start`'s consumers) reports each of them.
        if (component) names.push(...(component.roles ?? [component.name]));
        return component;
      });
      const heartbeat = createRoleHeartbeat({ db: root.db, logger: root.logger, roles: () => names });
      const service = await startInOrder([...reported, heartbeat], root.logger, {
        finally: () => root.close(),
      });
      root.markStarted();
      return service;
    },
    options.graceMs === undefined ? {} : { graceMs: options.graceMs },
  );
}

/**
 * PMS sources that share a Partner API key by the operator's word (PMS_SHARED_PARTNER_KEY=trusted)
 * are not held apart: said at every role's start, as a warning, naming them (never a key).
 */
function announceSharedKey(root: RolesRoot): void {
  if (!sourcesTrustEachOther(root.config)) return;
  root.logger.warn(
    {
      component: 'sources',
      sources: Object.keys(root.config.PMS_WEBHOOK_SECRETS).sort(),
      sharedBy: sourcesWithoutOwnKey(root.config),
    },
    "PMS_SHARED_PARTNER_KEY=trusted: PMS sources share a Partner API key, so each can reach the others' tenants",
  );
}
