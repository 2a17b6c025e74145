import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createReceiptPruner } from '../../src/receiver/receipt-pruner.js';
import { insertReceipts } from '../../src/receiver/receipt-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/** The receiver owns webhook_receipts (its dedupe) and prunes them itself, not the relay. */
describe('the receiver pruning its receipts', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.drop());

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
});
