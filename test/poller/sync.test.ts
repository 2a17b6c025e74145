import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordStateChange } from '../../src/changes/record-state-change.js';
import type { Resource } from '../../src/partner/resources.js';
import { createPollerHarness, type PollerHarness } from './poller-harness.js';

/** Short pages, so a few dozen records make several pages. */
const perPage = 10;

function seed(count: number, extra: (i: number) => Record<string, unknown> = () => ({})) {
  return Array.from({ length: count }, (_, i) => ({
    status: 'open',
    name: `r${String(i).padStart(3, '0')}`,
    ...extra(i),
  }));
}

describe('poller sync', () => {
  let h: PollerHarness;
  beforeAll(async () => {
    h = await createPollerHarness();
  });
  afterAll(() => h.close());

  const keys = async (resource: Resource) => (await h.events(resource)).map((e) => e.key);
  const idsOf = (items: { id?: unknown }[]) => items.map((r) => String(r.id));

  describe('when a version was published by webhook first', () => {
    it('is not published again by poll, and the next version carries the previous status', async () => {
      const items = await h.control.addRecords('applications', seed(3));
      const first = items[0] as Record<string, unknown>;
      await h.database.db.$transaction((tx) =>
        recordStateChange(tx, {
          resource: 'applications',
          record: first,
          via: 'webhook',
          source: '/webhooks/partner',
        }),
      );
      await h.poller({ perPage }).runOnce('applications');
      const events = await h.events('applications');
      expect(events.map((e) => e.key).sort()).toEqual(idsOf(items).sort());
      expect(events.find((e) => e.key === String(first.id))?.data.via).toBe('webhook');

      await h.control.patchRecord('applications', Number(first.id), { status: 'approved' });
      await h.poller({ perPage }).runOnce('applications');
      const after = await h.events('applications');
      expect(after).toHaveLength(4);
      expect(after[3]?.data).toMatchObject({
        id: String(first.id),
        via: 'poll',
        previous_status: 'open',
        record: { status: 'approved' },
      });
    });
  });

  describe('when a record is gone from a full read', () => {
    it('publishes it once as removed', async () => {
      const items = await h.control.addRecords('enrollments', seed(3));
      await h.poller({ perPage }).runOnce('enrollments');
      const gone = String(items[1]?.id);
      await h.control.deleteRecord('enrollments', Number(gone));
      await h.poller({ perPage }).runOnce('enrollments');
      await h.poller({ perPage }).runOnce('enrollments');
      const events = await h.events('enrollments');
      const removals = events.filter((e) => e.data.removed === true);
      expect(removals).toHaveLength(1);
      expect(removals[0]).toMatchObject({ key: gone, type: 'partner.enrollment.removed' });
      // Three versions, the removal, and the removal's tombstone right after it (decision 024).
      expect(events).toHaveLength(5);
      expect(events.at(-1)).toMatchObject({ key: gone, type: 'rentbridge.tombstone' });
    });
  });

  describe('when changes happen at 23:59:59 and 00:00:00 UTC around a pass', () => {
    it('publishes both: the next pass reads from the day the previous one started', async () => {
      await h.control.addRecords(
        'leads',
        seed(2, () => ({ updated_at: '2026-03-10T12:00:00.000Z' })),
      );
      const at = (iso: string) => () => new Date(iso);
      await h.poller({ perPage, now: at('2026-03-10T23:59:59.500Z') }).runOnce('leads');
      expect((await h.database.db.pollerCursor.findUnique({ where: { resource: 'leads' } }))?.fromDate).toBe(
        '2026-03-10',
      );
      const edge = await h.control.addRecords('leads', [
        { status: 'open', updated_at: '2026-03-10T23:59:59.000Z' },
        { status: 'open', updated_at: '2026-03-11T00:00:00.000Z' },
      ]);
      h.requests.length = 0;
      await h.poller({ perPage, now: at('2026-03-11T00:00:01.000Z') }).runOnce('leads');
      expect(h.listQueries('/partner/v1/leads')[0]?.updated_at_from_date).toBe('2026-03-10');
      expect(await keys('leads')).toEqual(expect.arrayContaining(idsOf(edge)));
      expect(await keys('leads')).toHaveLength(4);

      const late = await h.control.addRecords('leads', [
        { status: 'open', updated_at: '2026-03-11T00:00:00.000Z' },
      ]);
      await h.poller({ perPage, now: at('2026-03-11T00:10:00.000Z') }).runOnce('leads');
      expect(await keys('leads')).toEqual(expect.arrayContaining(idsOf(late)));
      expect(await keys('leads')).toHaveLength(5);
    });
  });

  describe('when a record already read is deleted while paging', () => {
    it('misses none of the records that slide back across the page boundary', async () => {
      const items = await h.control.addRecords('properties', seed(35));
      let deleted = false;
      const summaries = await h
        .poller({
          perPage,
          hooks: {
            async afterPage({ resource, page }) {
              if (resource !== 'properties' || page !== 1 || deleted) return;
              deleted = true;
              const firstPage = await keys('properties');
              await h.control.deleteRecord('properties', Number(firstPage[0]));
            },
          },
        })
        .runOnce('properties');
      expect(deleted).toBe(true);
      expect(summaries[0]?.outcome).toBe('completed');
      const published = await keys('properties');
      expect(published.sort()).toEqual(idsOf(items).sort());
    });
  });

  describe('when records are created while paging', () => {
    it('publishes no record twice, and the next pass publishes the new ones once', async () => {
      const items = await h.control.addRecords('customers', seed(25));
      let created: { id?: unknown }[] = [];
      await h
        .poller({
          perPage,
          hooks: {
            async afterPage({ resource, page }) {
              if (resource === 'customers' && page === 1 && created.length === 0)
                created = await h.control.addRecords('customers', seed(5));
            },
          },
        })
        .runOnce('customers');
      const once = await keys('customers');
      expect(new Set(once).size).toBe(once.length);
      await h.poller({ perPage }).runOnce('customers');
      const all = await keys('customers');
      expect(all.sort()).toEqual([...idsOf(items), ...idsOf(created)].sort());
    });
  });

  describe('when a pass crashes after its first page', () => {
    it('leaves the cursor unmoved, and the next pass publishes everything once', async () => {
      const items = await h.control.addRecords('billing_statements', seed(25));
      const crashed = await h
        .poller({
          perPage,
          hooks: {
            afterPage({ page }) {
              if (page === 1) throw new Error('simulated crash');
            },
          },
        })
        .runOnce('billing_statements');
      expect(crashed[0]).toMatchObject({ outcome: 'failed', error: 'simulated crash' });
      const cursor = await h.database.db.pollerCursor.findUnique({
        where: { resource: 'billing_statements' },
      });
      expect(cursor?.fromDate ?? null).toBeNull();
      expect(cursor?.lastError).toBe('simulated crash');
      expect(await keys('billing_statements')).toHaveLength(perPage);

      const resumed = await h.poller({ perPage }).runOnce('billing_statements');
      expect(resumed[0]?.outcome).toBe('completed');
      expect((await keys('billing_statements')).sort()).toEqual(idsOf(items).sort());
      const after = await h.database.db.pollerCursor.findUnique({
        where: { resource: 'billing_statements' },
      });
      expect(after?.fromDate).toBe(new Date().toISOString().slice(0, 10));
    });
  });

  describe('when two pollers run at once', () => {
    it('lets one poll a resource and skips it in the other, which still polls other resources', async () => {
      await h.control.addRecords('roles', seed(25));
      await h.control.addRecords('listings', seed(3));
      let reached!: () => void;
      const atFirstPage = new Promise<void>((resolve) => (reached = resolve));
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const first = h
        .poller({
          perPage,
          hooks: {
            async afterPage({ page }) {
              if (page !== 1) return;
              reached();
              await gate;
            },
          },
        })
        .runOnce('roles');
      await atFirstPage;
      const other = h.poller({ perPage });
      expect((await other.runOnce('roles'))[0]?.outcome).toBe('skipped');
      expect((await other.runOnce('listings'))[0]?.outcome).toBe('completed');
      release();
      expect((await first)[0]?.outcome).toBe('completed');
      expect((await other.runOnce('roles'))[0]?.outcome).toBe('completed');
      const roles = await keys('roles');
      expect(new Set(roles).size).toBe(25);
      expect(roles).toHaveLength(25);
    });
  });
  describe('when started continuously', () => {
    it('polls each resource on its own, and stop() ends the passes and releases the locks', async () => {
      await h.control.addRecords('magic_links', seed(3));
      const continuous = h.poller({
        perPage,
        resources: ['magic_links', 'users'],
        intervals: { magic_links: 1, users: 1 },
      });
      await continuous.start();
      await expect
        .poll(
          async () =>
            (await h.database.db.pollerCursor.findUnique({ where: { resource: 'magic_links' } }))
              ?.lastSucceededAt,
          {
            timeout: 20_000,
          },
        )
        .toBeTruthy();
      await continuous.stop();
      expect(await keys('magic_links')).toHaveLength(3);
      expect((await h.poller({ perPage }).runOnce('magic_links'))[0]?.outcome).toBe('completed');
    });
  });
  describe('when the client re-reads page boundaries', () => {
    it('counts every request the pass sent, not only the pages it received', async () => {
      await h.control.addRecords(
        'units',
        seed(25, (i) => ({ title: `u${String(i).padStart(3, '0')}` })),
      );
      h.requests.length = 0;
      const [summary] = await h.poller({ perPage }).runOnce('units');
      const sent = h.listQueries('/partner/v1/units').length;
      expect(sent).toBeGreaterThanOrEqual(summary?.stats?.pageCount ?? 0);
      expect(summary?.stats?.requests).toBe(sent);
      expect(await keys('units')).toHaveLength(25);
    });
  });
  describe('when a record is created and published by webhook while a full read pages', () => {
    it('is not taken for removed, though the read missed it', async () => {
      await h.control.addRecords('users', seed(15));
      let created: Record<string, unknown> | undefined;
      await h
        .poller({
          perPage,
          hooks: {
            async afterPage({ resource, page }) {
              if (resource !== 'users' || page !== 1 || created) return;
              [created] = await h.control.addRecords('users', seed(1));
              const record = created as Record<string, unknown>;
              await h.database.db.$transaction((tx) =>
                recordStateChange(tx, {
                  resource: 'users',
                  record,
                  via: 'webhook',
                  source: '/webhooks/partner',
                }),
              );
            },
          },
        })
        .runOnce('users');
      const events = await h.events('users');
      expect(events.filter((e) => e.data.removed === true)).toEqual([]);
      expect(events).toHaveLength(16);
    });
  });
});
