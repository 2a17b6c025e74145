import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createReceiptPruner } from '../../src/receiver/receipt-pruner.js';
import { insertReceipts } from '../../src/receiver/receipt-repository.js';
import { useTestDatabase } from '../support/db.js';

/** The receiver owns webhook_receipts (its dedupe) and prunes them itself, not the relay. */
describe('the receiver pruning its receipts', () => {
  const database = useTestDatabase();

  describe('when receipts are older than the retention', () => {
    it('prunes them and keeps the recent ones', async () => {
      const { db } = database;
      await db.$transaction((tx) =>
        insertReceipts(tx, [
          { source: '/webhooks/pms/acme', webhookId: 'old', eventType: 'rent.payment' },
          { source: '/webhooks/pms/acme', webhookId: 'new', eventType: 'rent.payment' },
        ]),
      );
      await database.sql.query(
        `UPDATE webhook_receipts SET received_at = now() - interval '5 hours' WHERE webhook_id = 'old'`,
      );
      const pruner = createReceiptPruner({
        db,
        logger: createLogger({ level: 'silent' }),
        retentionHours: 1,
      });
      pruner.start();
      try {
        await vi.waitFor(
          async () => {
            const { rows } = await database.sql.query<{ webhook_id: string }>(
              'SELECT webhook_id FROM webhook_receipts ORDER BY webhook_id',
            );
            expect(rows.map((r) => r.webhook_id)).toEqual(['new']);
          },
          { timeout: 10_000, interval: 100 },
        );
      } finally {
        await pruner.stop();
      }
      const receipts = await database.sql.query<{ n: string }>(
        `SELECT count(*) AS n FROM webhook_receipts WHERE received_at < now() - interval '1 hour'`,
      );
      expect(Number(receipts.rows[0]?.n)).toBe(0);
    });
  });

  describe('when the tolerance window is longer than the retention', () => {
    it('keeps every receipt a replayed copy could still be checked against', async () => {
      const { db } = database;
      await db.$transaction((tx) =>
        insertReceipts(tx, [
          { source: 'pms-token:beta', webhookId: 'in-window', eventType: 'customer.access_token_requested' },
          {
            source: 'pms-token:beta',
            webhookId: 'past-window',
            eventType: 'customer.access_token_requested',
          },
        ]),
      );
      // A tolerance of 2 h: a copy signed at T is accepted until T + 2 h and could have been
      // first seen at T - 2 h, so a receipt 3.5 h old must still be there; one 4.5 h old may go.
      await database.sql.query(
        `UPDATE webhook_receipts SET received_at = now() - interval '210 minutes' WHERE webhook_id = 'in-window'`,
      );
      await database.sql.query(
        `UPDATE webhook_receipts SET received_at = now() - interval '270 minutes' WHERE webhook_id = 'past-window'`,
      );
      const pruner = createReceiptPruner({
        db,
        logger: createLogger({ level: 'silent' }),
        retentionHours: 1,
        toleranceSeconds: 7200,
      });
      pruner.start();
      try {
        await vi.waitFor(
          async () => {
            const { rows } = await database.sql.query<{ webhook_id: string }>(
              `SELECT webhook_id FROM webhook_receipts WHERE source = 'pms-token:beta' ORDER BY webhook_id`,
            );
            expect(rows.map((r) => r.webhook_id)).toEqual(['in-window']);
          },
          { timeout: 10_000, interval: 100 },
        );
      } finally {
        await pruner.stop();
      }
    });
  });
});
