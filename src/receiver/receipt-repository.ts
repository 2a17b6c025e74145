import type { Db } from '../db/prisma.js';
import type { Tx } from '../outbox/outbox-repository.js';

/**
 * webhook_receipts: one row per accepted webhook, keyed by (source, webhook-id). Inserting the
 * receipt is the dedupe: a row that already exists makes the webhook a duplicate.
 */
export interface ReceiptKey {
  source: string;
  webhookId: string;
  eventType: string;
}

/** Inserts the receipts; returns the keys (`source \n webhookId`) that were new. */
export async function insertReceipts(tx: Tx, receipts: ReceiptKey[]): Promise<Set<string>> {
  if (receipts.length === 0) return new Set();
  const rows = await tx.$queryRaw<{ source: string; webhook_id: string }[]>`
    INSERT INTO webhook_receipts (source, webhook_id, event_type)
    SELECT * FROM unnest(${receipts.map((r) => r.source)}::text[],
                         ${receipts.map((r) => r.webhookId)}::text[],
                         ${receipts.map((r) => r.eventType)}::text[])
    ON CONFLICT DO NOTHING
    RETURNING source, webhook_id`;
  return new Set(rows.map((r) => receiptKey(r.source, r.webhook_id)));
}

export function receiptKey(source: string, webhookId: string): string {
  return `${source}\n${webhookId}`;
}

/**
 * Deletes receipts older than the retention, a chunk at a time. The dedupe window is therefore
 * OUTBOX_RETENTION_HOURS: longer than any sender's retry schedule (Standard Webhooks senders
 * retry for about a day), and a replay older than WEBHOOK_TOLERANCE_SECONDS needs a fresh signature.
 */
export async function pruneReceipts(db: Db, retentionHours: number, chunk = 5000): Promise<number> {
  const before = new Date(Date.now() - retentionHours * 3_600_000);
  let total = 0;
  for (;;) {
    const n = await db.$executeRaw`
      DELETE FROM webhook_receipts WHERE ctid IN (
        SELECT ctid FROM webhook_receipts WHERE received_at < ${before} LIMIT ${chunk})`;
    total += n;
    if (n < chunk) return total;
  }
}

/**
 * Claims one signed request's `webhook-id` for its source (a row in webhook_receipts, the same
 * dedupe the webhooks use, so every receiver process sees it): true when it was new. A customer
 * token request claims before it asks the Partner API, so two copies sent at once cannot both
 * mint a token.
 */
export async function claimReceipt(db: Db, receipt: ReceiptKey): Promise<boolean> {
  const n = await db.$executeRaw`
    INSERT INTO webhook_receipts (source, webhook_id, event_type)
    VALUES (${receipt.source}, ${receipt.webhookId}, ${receipt.eventType})
    ON CONFLICT DO NOTHING`;
  return n === 1;
}

/** Gives a claim back: the request did not get what it asked for, so the same signature may retry. */
export async function releaseReceipt(db: Db, source: string, webhookId: string): Promise<void> {
  await db.$executeRaw`DELETE FROM webhook_receipts WHERE source = ${source} AND webhook_id = ${webhookId}`;
}
