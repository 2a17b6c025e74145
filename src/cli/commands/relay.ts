import { createRelay, type Relay } from '../../relay/relay.js';
import type { Runtime } from '../../runtime.js';
import { createRuntime } from '../../runtime.js';
import { loadConfigOrExit, runUntilSignal } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

/** The relay of this process, from the runtime's configuration. */
export function buildRelay(runtime: Runtime): Relay {
  const { config } = runtime;
  return createRelay({
    db: runtime.db,
    kafka: runtime.kafka,
    logger: runtime.logger,
    databaseUrl: config.DATABASE_URL,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    retentionHours: config.OUTBOX_RETENTION_HOURS,
    maxBatchBytes: config.RELAY_MAX_BATCH_BYTES,
    stallSeconds: config.RELAY_STALL_SECONDS,
  });
}

/** `rentbridge relay`: publishes outbox rows to Kafka. */
export async function relay(): Promise<void> {
  const runtime = createRuntime(loadConfigOrExit());
  await requireMigrated(runtime.config.DATABASE_URL, runtime.logger);
  await runUntilSignal(runtime.logger, async () => {
    await runtime.ensureTopics();
    const r = buildRelay(runtime);
    await r.start();
    return {
      async stop() {
        await r.stop();
        await runtime.close();
      },
    };
  });
}
