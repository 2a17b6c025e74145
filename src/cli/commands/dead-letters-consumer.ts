import { createDeadLetterIndexer, type DeadLetterIndexer } from '../../dead-letters/dead-letter-indexer.js';
import type { Runtime } from '../../runtime.js';
import { createRuntime } from '../../runtime.js';
import { loadConfigOrExit, runUntilSignal } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

/** The dead-letter indexer of this process, from the runtime's configuration. */
export function buildDeadLetterIndexer(runtime: Runtime): DeadLetterIndexer {
  return createDeadLetterIndexer({
    db: runtime.db,
    kafka: runtime.kafka,
    logger: runtime.logger,
    topicPrefix: runtime.config.KAFKA_TOPIC_PREFIX,
  });
}

/** `rentbridge consumer dead-letters`: indexes every `*.dlq` topic into PostgreSQL for ops. */
export async function deadLettersConsumer(): Promise<void> {
  const runtime = createRuntime(loadConfigOrExit());
  await requireMigrated(runtime.config.DATABASE_URL, runtime.logger);
  await runUntilSignal(runtime.logger, async () => {
    await runtime.ensureTopics();
    const indexer = buildDeadLetterIndexer(runtime);
    await indexer.start();
    return {
      async stop() {
        await indexer.stop();
        await runtime.close();
      },
    };
  });
}
