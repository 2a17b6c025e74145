import { describe, expect, it } from 'vitest';
import { recordStateChange } from '../../src/changes/record-state-change.js';
import { recordPolledChanges } from '../../src/poller/batch-state-changes.js';
import { useTestDatabase } from '../support/db.js';

const record = (id: string, status: string | undefined, updated_at: string) => ({
  id,
  updated_at,
  ...(status && { status }),
  name: `n${id}`,
});

describe('recordPolledChanges', () => {
  const database = useTestDatabase();

  describe('when a page is written', () => {
    it('writes the same event recordStateChange writes for each record', async () => {
      const { db } = database;
      const one = record('1', 'open', '2026-01-01T00:00:00Z');
      await db.$transaction((tx) =>
        recordStateChange(tx, { resource: 'leads', record: one, via: 'poll', source: '/poller/leads' }),
      );
      await db.$transaction((tx) => recordPolledChanges(tx, 'units', [one], '/poller/units'));
      const [single, batched] = await db.outboxMessage.findMany({ orderBy: { id: 'asc' } });
      const shape = (m: typeof single) => ({
        key: m?.key,
        subject: m?.subject,
        type: m?.type.replace(/lead|unit/, 'x'),
        data: { ...(m?.data as object), resource: 'x' },
      });
      expect(shape(batched)).toEqual(shape(single));
      expect(batched?.topic).toBe('partner.units');
    });

    it('publishes only versions never published, with the previous status, whoever published them', async () => {
      const { db } = database;
      await db.$transaction((tx) =>
        recordStateChange(tx, {
          resource: 'leads',
          record: record('2', 'open', 'v1'),
          via: 'webhook',
          source: '/webhooks/partner',
        }),
      );
      const page = [
        record('1', 'open', '2026-01-01T00:00:00Z'),
        record('2', 'open', 'v1'),
        record('2', 'won', 'v2'),
        record('3', undefined, 'v1'),
      ];
      // Record 2 appears twice: the last one wins, as one version per id per page.
      expect(await db.$transaction((tx) => recordPolledChanges(tx, 'leads', page, '/poller/leads'))).toBe(2);
      const rows = await db.outboxMessage.findMany({
        where: { topic: 'partner.leads' },
        orderBy: { id: 'asc' },
      });
      const data = rows.map((r) => r.data as { id: string; previous_status: string | null; via: string });
      expect(data.map((d) => [d.id, d.previous_status, d.via])).toEqual([
        ['1', null, 'poll'],
        ['2', null, 'webhook'],
        ['2', 'open', 'poll'],
        ['3', null, 'poll'],
      ]);
      expect(await db.$transaction((tx) => recordPolledChanges(tx, 'leads', page, '/poller/leads'))).toBe(0);
    });
  });
});
