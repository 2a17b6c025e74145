import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import { OUTBOX_CHANNEL } from './outbox-repository.js';

/**
 * Wakes the relay once outbox rows are committed — after the commit, never inside the writing
 * transaction: a NOTIFY there holds PostgreSQL's cluster-wide notify lock through the WAL flush,
 * so that the writers' commits could never share a flush (decision 001). A wake-up is not data:
 * lost (the process dies first, or the query fails), the relay still finds the rows on its sweep.
 */
export interface RelayWaker {
  /** Asks for a wake-up; never throws. Wake-ups asked while one is on its way share the next. */
  wake(): void;
  /** Waits for the wake-up on its way, if any. */
  idle(): Promise<void>;
}

/** `notify` sends one NOTIFY on OUTBOX_CHANNEL (see `notifyRelay`, or the receiver's own pool). */
export function createRelayWaker(notify: () => Promise<unknown>, logger: Logger): RelayWaker {
  let waking: Promise<void> | null = null;
  let wakeAgain = false;
  function wake(): void {
    if (waking) {
      wakeAgain = true;
      return;
    }
    waking = notify()
      .then(
        () => undefined,
        (error: unknown) =>
          logger.warn({ err: error }, 'relay not woken: it will find the rows on its sweep'),
      )
      .finally(() => {
        waking = null;
        if (wakeAgain) {
          wakeAgain = false;
          wake();
        }
      });
  }
  return {
    wake,
    async idle() {
      while (waking) await waking;
    },
  };
}

/** One NOTIFY through Prisma, outside any transaction (its own short autocommit). */
export async function notifyRelay(db: Db): Promise<void> {
  await db.$executeRaw`SELECT pg_notify(${OUTBOX_CHANNEL}, '')`;
}
