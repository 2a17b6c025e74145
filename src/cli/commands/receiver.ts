import { createCompositionRoot, runRoles } from '../../app/composition-root.js';
import { loadConfigOrExit } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

/** `rentbridge receiver`: webhooks, the ops API and console, /metrics and health on HTTP_PORT. */
export async function receiver(): Promise<void> {
  const root = createCompositionRoot(loadConfigOrExit());
  await requireMigrated(root.config.DATABASE_URL, root.logger);
  await runRoles(root, () => [root.http()]);
}
