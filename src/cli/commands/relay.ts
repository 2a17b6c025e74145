import { createRelay } from '../../relay/relay.js';
import { createRuntime } from '../../runtime.js';
import { loadConfigOrExit, runUntilSignal } from '../process.js';

/** `rentbridge relay`: publishes outbox rows to Kafka. */
export async function relay(): Promise<void> {
  const runtime = createRuntime(loadConfigOrExit());
  const { config, logger } = runtime;
  await runUntilSignal(logger, async () => {
    await runtime.ensureTopics();
    const r = createRelay({
      db: runtime.db,
      kafka: runtime.kafka,
      logger,
      databaseUrl: config.DATABASE_URL,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
      retentionHours: config.OUTBOX_RETENTION_HOURS,
    });
    await r.start();
    return {
      async stop() {
        await r.stop();
        await runtime.close();
      },
    };
  });
}
