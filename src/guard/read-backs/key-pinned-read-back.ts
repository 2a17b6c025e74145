import type { ReadBackStrategy } from './read-back.js';

/** The snapshot's fact naming the Partner API key that read it (never the key itself). */
export const SNAPSHOT_KEY_FACT = 'partner_key';

/**
 * A read-back strategy whose snapshots say which Partner API key read them (issue 34). A scoped key
 * sees another list than the deployment key (spec 5.9), so a read-back compares like with like
 * only when it reads with the key the snapshot was read with. Within one process a command always
 * acts with one key; the key can differ only when PMS_PARTNER_KEYS changed while the command was
 * in flight (a restart between its snapshot and its read-back). Then the snapshot is no evidence:
 * the verdict is `unknown`, saying why, and never a guess from two different views. A snapshot
 * stored before snapshots named their key is read as before.
 */
export function keyPinnedReadBack<C>(strategy: ReadBackStrategy<C>, keyId: string): ReadBackStrategy<C> {
  return {
    async snapshot(command, ctx) {
      return { ...(await strategy.snapshot(command, ctx)), [SNAPSHOT_KEY_FACT]: keyId };
    },
    verdict(command, snapshot, ctx) {
      const readWith = snapshot[SNAPSHOT_KEY_FACT];
      if (typeof readWith === 'string' && readWith !== keyId) {
        ctx.missing?.(
          `the snapshot was read with another Partner API key (${readWith}) than the read-back (${keyId}): ` +
            'PMS_PARTNER_KEYS changed while the command was in flight, and two keys may see different lists',
        );
        return Promise.resolve('unknown');
      }
      return strategy.verdict(command, snapshot, ctx);
    },
    write: (command, requestId) => strategy.write(command, requestId),
  };
}
