import { vi } from 'vitest';
import type { CommandType } from '../../src/command-types/command-type.js';
import type { Harness } from '../consumers/support/harness.js';
import { useApp } from '../support/app.js';

/**
 * The redrive loop's set-up, as hooks of the calling `describe`: a command consumer of `spec` and
 * the dead-letter indexer on one harness (useApp). Read `h` inside tests and hooks.
 */
export function useRedriveHarness<C>(spec: CommandType<C>): {
  readonly h: Harness;
  /** The id of the indexed dead letter of a command, once the indexer has stored it. */
  indexedLetterOf(commandId: string): Promise<number>;
} {
  const app = useApp({ harness: true, consumers: [spec], deadLetterIndexer: true });
  return {
    get h() {
      return app.harness;
    },
    indexedLetterOf: (commandId) =>
      vi.waitFor(
        async () => {
          const row = await app.database.db.deadLetter.findFirst({ where: { commandId } });
          if (!row) throw new Error(`dead letter of ${commandId} not indexed`);
          return Number(row.id);
        },
        { timeout: 30_000, interval: 200 },
      ),
  };
}
