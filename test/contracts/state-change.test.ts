import { describe, expect, it } from 'vitest';
import { recordStateChange } from '../../src/changes/record-state-change.js';
import { useTestDatabase } from '../support/db.js';

describe('recordStateChange', () => {
  const database = useTestDatabase();

  const record = (status: string, updated_at: string) => ({ id: 7, status, updated_at });

  describe('when the same version arrives by webhook and by poll', () => {
    it('publishes it once, and the next version carries the previous status', async () => {
      const { db } = database;
      const first = await db.$transaction((tx) =>
        recordStateChange(tx, {
          resource: 'applications',
          record: record('submitted', '2026-01-01T00:00:00Z'),
          via: 'webhook',
          source: '/t',
        }),
      );
      const again = await db.$transaction((tx) =>
        recordStateChange(tx, {
          resource: 'applications',
          record: record('submitted', '2026-01-01T00:00:00Z'),
          via: 'poll',
          source: '/t',
        }),
      );
      const next = await db.$transaction((tx) =>
        recordStateChange(tx, {
          resource: 'applications',
          record: record('approved', '2026-01-02T00:00:00Z'),
          via: 'poll',
          source: '/t',
        }),
      );
      expect(first.published).toBe(true);
      expect(again.published).toBe(false);
      expect(next.published).toBe(true);
      const rows = await db.outboxMessage.findMany({ orderBy: { id: 'asc' } });
      expect(rows.map((r) => r.type)).toEqual(['partner.application.updated', 'partner.application.updated']);
      expect(rows[1]?.data).toMatchObject({
        previous_status: 'submitted',
        via: 'poll',
        id: '7',
        removed: false,
      });
      expect(rows[0]?.key).toBe('7');
    });
  });

  describe('when a record is removed', () => {
    it('publishes one removal event', async () => {
      const { db } = database;
      const removal = () =>
        db.$transaction((tx) =>
          recordStateChange(tx, {
            resource: 'applications',
            record: record('approved', '2026-01-02T00:00:00Z'),
            via: 'poll',
            removed: true,
            source: '/t',
          }),
        );
      expect((await removal()).published).toBe(true);
      expect((await removal()).published).toBe(false);
      const known = await db.knownRecord.findFirst({ where: { recordId: '7' } });
      expect(known?.removedAt).not.toBeNull();
    });
  });
});
