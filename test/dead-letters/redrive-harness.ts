import { vi } from 'vitest';
import type { CommandType } from '../../src/command-types/command-type.js';
import { createDeadLetterIndexer } from '../../src/dead-letters/dead-letter-indexer.js';
import { createHarness, logger, type Harness } from '../consumers/support/harness.js';

/** A command consumer and the dead-letter indexer on one harness: the redrive loop's set-up. */
export interface RedriveHarness {
  h: Harness;
  /** The id of the indexed dead letter of a command, once the indexer has stored it. */
  indexedLetterOf(commandId: string): Promise<number>;
  close(): Promise<void>;
}

export async function createRedriveHarness<C>(spec: CommandType<C>): Promise<RedriveHarness> {
  const h = await createHarness();
  await h.startConsumer(spec);
  const indexer = createDeadLetterIndexer({
    db: h.database.db,
    kafka: h.kafka.kafka,
    logger,
    topicPrefix: h.kafka.prefix,
  });
  await indexer.start();
  return {
    h,
    indexedLetterOf: (commandId) =>
      vi.waitFor(
        async () => {
          const row = await h.database.db.deadLetter.findFirst({ where: { commandId } });
          if (!row) throw new Error(`dead letter of ${commandId} not indexed`);
          return Number(row.id);
        },
        { timeout: 30_000, interval: 200 },
      ),
    async close() {
      await indexer.stop();
      await h.close();
    },
  };
}
