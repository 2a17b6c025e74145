import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import { pruneReceipts } from './receipt-repository.js';

/**
 * The receiver prunes its own receipts (webhook_receipts, its dedupe): at start, then every
 * `everyMs`, those older than OUTBOX_RETENTION_HOURS — as long as the outbox rows they produced
 * are kept (the relay prunes those) — and never before two WEBHOOK_TOLERANCE_SECONDS have passed:
 * a signature is accepted from the tolerance before its timestamp to the tolerance after it, so a
 * replayed copy (of a webhook or of a customer-token request, issue 34) can come that long after
 * the first one and must still find its receipt. Several receivers may prune at once: each deletes a chunk at
 * a time, so they only share the work. A failed pass is logged and tried again on the next one.
 */
export interface ReceiptPruner {
  start(): void;
  /** Waits for a pass in hand. */
  stop(): Promise<void>;
}

/** How long receipts are kept: the retention, or the whole replay window when that is longer. */
export function keptHours(retentionHours: number, toleranceSeconds: number): number {
  return Math.max(retentionHours, (2 * toleranceSeconds + 60) / 3600);
}

export function createReceiptPruner(options: {
  db: Db;
  logger: Logger;
  retentionHours: number;
  /** WEBHOOK_TOLERANCE_SECONDS: receipts are kept at least twice as long (plus a minute of skew). */
  toleranceSeconds?: number;
  /** Default one minute (the relay's former pace). */
  everyMs?: number;
}): ReceiptPruner {
  const { db, logger } = options;
  const retentionHours = keptHours(options.retentionHours, options.toleranceSeconds ?? 0);
  const everyMs = options.everyMs ?? 60_000;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> | null = null;
  let stopped = false;

  function run(): void {
    pass = pruneReceipts(db, retentionHours)
      .then(
        (receipts) => {
          if (receipts > 0) logger.info({ receipts }, 'webhook receipts pruned');
        },
        (error: unknown) => logger.warn({ err: error }, 'webhook receipts not pruned: trying again later'),
      )
      .finally(() => {
        pass = null;
        if (!stopped) timer = setTimeout(run, everyMs);
      });
  }

  return {
    start() {
      stopped = false;
      run();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await pass;
    },
  };
}
