import { createCompositionRoot, runRoles } from '../../app/composition-root.js';
import { loadConfigOrExit } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

/** `rentbridge relay`: publishes outbox rows to Kafka. */
export async function relay(): Promise<void> {
  const root = createCompositionRoot(loadConfigOrExit());
  await requireMigrated(root.config.DATABASE_URL, root.logger);
  await runRoles(root, () => [root.relay()], { before: () => root.ensureTopics() });
}
