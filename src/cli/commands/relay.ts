import { createCompositionRoot, runRoles } from '../../app/composition-root.js';
import { loadConfigOrExit } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

/** `rentbridge relay`: publishes outbox rows to Kafka; /metrics and health on HTTP_PORT. */
export async function relay(): Promise<void> {
  const root = createCompositionRoot(loadConfigOrExit());
  await requireMigrated(root.config.DATABASE_URL, root.logger);
  // Built first: its readiness check is on /readyz from the first request.
  const role = root.relay();
  await runRoles(root, () => [root.probes(), role], { before: () => root.ensureTopics() });
}
