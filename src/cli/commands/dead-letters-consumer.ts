import { createDeadLetterIndexer } from '../../dead-letters/dead-letter-indexer.js';
import { createRuntime } from '../../runtime.js';
import { loadConfigOrExit, runUntilSignal } from '../process.js';

/** `rentbridge consumer dead-letters`: indexes every `*.dlq` topic into PostgreSQL for ops. */
export async function deadLettersConsumer(): Promise<void> {
  const runtime = createRuntime(loadConfigOrExit());
  await runUntilSignal(runtime.logger, async () => {
    await runtime.ensureTopics();
    const indexer = createDeadLetterIndexer({
      db: runtime.db,
      kafka: runtime.kafka,
      logger: runtime.logger,
      topicPrefix: runtime.config.KAFKA_TOPIC_PREFIX,
    });
    await indexer.start();
    return {
      async stop() {
        await indexer.stop();
        await runtime.close();
      },
    };
  });
}
