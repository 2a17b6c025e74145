import { startHttpRole } from '../../roles/http-role.js';
import { createRuntime } from '../../runtime.js';
import { loadConfigOrExit, runUntilSignal } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

/** `rentbridge receiver`: webhooks, the ops API and console, /metrics and health on HTTP_PORT. */
export async function receiver(): Promise<void> {
  const runtime = createRuntime(loadConfigOrExit());
  await requireMigrated(runtime.config.DATABASE_URL, runtime.logger);
  await runUntilSignal(runtime.logger, async () => {
    const http = await startHttpRole(runtime);
    return {
      async stop() {
        await http.stop();
        await runtime.close();
      },
    };
  });
}
