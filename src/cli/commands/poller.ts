import { createCompositionRoot, runRoles } from '../../app/composition-root.js';
import { scheduledReconcile } from '../../app/reconcile-role.js';
import { loadConfigOrExit } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

/**
 * `rentbridge poller`: polls every resource on its interval until SIGTERM/SIGINT; /metrics and
 * health on HTTP_PORT.
 */
export async function poller(): Promise<void> {
  const root = createCompositionRoot(loadConfigOrExit());
  await requireMigrated(root.config.DATABASE_URL, root.logger);
  // Built before the signal handlers: no PARTNER_API_URL is a usage error (exit 2) at once.
  const role = root.poller();
  // The scheduled reconciliation (RECONCILE_INTERVAL) runs with the poller: both are poll-lane work.
  await runRoles(root, () => [root.probes(), role, () => scheduledReconcile(root)]);
}
