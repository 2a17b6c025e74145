import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { recordChanges } from '../../src/changes/record-changes.js';
import { parseDatabaseUrl } from '../../src/db/database-url.js';
import { OUTBOX_CHANNEL } from '../../src/outbox/outbox-repository.js';
import { writePage } from '../../src/poller/poller-repository.js';
import { useTestDatabase } from '../support/db.js';

describe('recordChanges (the one write path of state changes)', () => {
  const database = useTestDatabase();

  describe('when one batch holds the same record more than once', () => {
    it('records them as if one after the other: a second version carries the first one status, a repeat is not published', async () => {
      const { db } = database;
      const change = (status: string, updated_at: string) => ({
        resource: 'applications' as const,
        record: { id: 9, status, updated_at },
        via: 'webhook' as const,
        source: '/webhooks/partner',
      });
      const recorded = await db.$transaction((tx) =>
        recordChanges(tx, [change('submitted', 'v1'), change('approved', 'v2'), change('approved', 'v2')]),
      );
      expect(recorded.map((r) => r.published)).toEqual([true, true, false]);
      const rows = await db.outboxMessage.findMany({ orderBy: { id: 'asc' } });
      expect(rows.map((r) => r.eventId)).toEqual([recorded[0]?.eventId, recorded[1]?.eventId]);
      expect(rows.map((r) => (r.data as { previous_status: string | null }).previous_status)).toEqual([
        null,
        'submitted',
      ]);
      const known = await db.knownRecord.findUnique({
        where: { resource_recordId: { resource: 'applications', recordId: '9' } },
      });
      expect(known).toMatchObject({ updatedAt: 'v2', status: 'approved', removedAt: null });
    });
  });

  describe('when the poller writes a page', () => {
    it('wakes the relay after the commit', async () => {
      // NOTIFY channels are per database, not per schema: on a shared server another writer may
      // notify too, so this can only fail for lack of a wake-up when the others are quiet.
      const { connectionString } = parseDatabaseUrl(database.url);
      const listener = new pg.Client({ connectionString });
      await listener.connect();
      try {
        const woken = new Promise<void>((resolve) => listener.on('notification', () => resolve()));
        await listener.query(`LISTEN ${OUTBOX_CHANNEL}`);
        const n = await writePage(database.db, 'leads', [{ id: '1', updated_at: 'v1' }], '/poller/leads');
        expect(n).toBe(1);
        await woken;
      } finally {
        await listener.end();
      }
    });
  });
});
