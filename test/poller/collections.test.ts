import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIST_PATHS, type PagedResource } from '../../src/partner/index.js';
import { RESOURCES } from '../../src/partner/resources.js';
import { COLLECTION_RULES } from '../../src/poller/index.js';
import { createPollerHarness, type PollerHarness } from './poller-harness.js';

const today = () => new Date().toISOString().slice(0, 10);
const dated = RESOURCES.filter((r) => COLLECTION_RULES[r].kind === 'dated') as PagedResource[];
const full = RESOURCES.filter((r) => COLLECTION_RULES[r].kind === 'full') as PagedResource[];

describe('poller collections', () => {
  let h: PollerHarness;
  let customerIds: string[] = [];
  beforeAll(async () => {
    h = await createPollerHarness();
    for (const resource of [...dated, ...full]) {
      await h.control.addRecords(resource, [
        { status: 'open', name: `${resource} a`, title: 'a' },
        { status: 'open', name: `${resource} b`, title: 'b' },
      ]);
    }
    await h.control.addRecords('bank_accounts', [{ name: 'operating' }]);
  });
  afterAll(() => h.close());

  describe('when a first pass runs over every resource', () => {
    it('publishes every record of every paginated collection, each on its own topic', async () => {
      const summaries = await h.poller().runOnce();
      expect(summaries.map((s) => [s.resource, s.outcome])).toEqual(RESOURCES.map((r) => [r, 'completed']));
      for (const resource of [...dated, ...full]) {
        const events = await h.events(resource);
        expect(events, resource).toHaveLength(2);
        expect(events[0]?.data).toMatchObject({ resource, via: 'poll', removed: false });
      }
      expect(await h.events('bank_accounts')).toHaveLength(1);
      customerIds = (await h.events('customers')).map((e) => e.key);
    });

    it('asks for 1,000 records a page and reads date-filtered collections in full the first time', () => {
      for (const resource of [...dated, ...full]) {
        const queries = h.listQueries(LIST_PATHS[resource]);
        expect(queries.length, resource).toBeGreaterThan(0);
        for (const q of queries) {
          expect(q.per_page, resource).toBe('1000');
          const rule = COLLECTION_RULES[resource];
          if (rule.kind === 'dated') expect(q[rule.fromKey], resource).toBeUndefined();
        }
      }
    });

    it('reads bank accounts with one call and the issues of every known customer', () => {
      expect(h.listQueries('/partner/v1/bank_accounts')).toHaveLength(1);
      const issuePaths = h.requests
        .filter((u) => /\/customers\/[^/]+\/issues$/.test(u.pathname))
        .map((u) => u.pathname);
      expect(issuePaths.sort()).toEqual(customerIds.map((id) => `/partner/v1/customers/${id}/issues`).sort());
    });
  });

  describe('when the next pass runs', () => {
    it('reads each date-filtered collection from the day the previous pass started, by its own filter', async () => {
      h.requests.length = 0;
      await h.poller().runOnce();
      for (const resource of dated) {
        const rule = COLLECTION_RULES[resource];
        if (rule.kind !== 'dated') continue;
        const queries = h.listQueries(LIST_PATHS[resource]);
        expect(queries.length, resource).toBeGreaterThan(0);
        for (const q of queries) expect(q[rule.fromKey], resource).toBe(today());
      }
      for (const resource of full) {
        for (const q of h.listQueries(LIST_PATHS[resource]))
          expect(Object.keys(q).sort(), resource).toEqual(['page', 'per_page']);
      }
    });

    it('publishes nothing again', async () => {
      for (const resource of RESOURCES) {
        const expected = resource === 'bank_accounts' ? 1 : resource === 'customer_issues' ? 0 : 2;
        expect(await h.events(resource), resource).toHaveLength(expected);
      }
    });

    it('reports the requests each pass really sent, boundary re-reads included', async () => {
      for (const resource of [...dated, ...full]) {
        const cursor = await h.database.db.pollerCursor.findUnique({ where: { resource } });
        expect((cursor?.lastStats as { requests?: number }).requests, resource).toBe(
          h.listQueries(LIST_PATHS[resource]).length,
        );
      }
    });

    it('stores each cursor at the day the pass started, with its stats', async () => {
      const cursors = await h.database.db.pollerCursor.findMany();
      expect(cursors).toHaveLength(RESOURCES.length);
      for (const c of cursors) {
        expect(c.fromDate).toBe(today());
        expect(c.lastStats).toMatchObject({ requests: expect.any(Number), records: expect.any(Number) });
      }
    });
  });

  describe('when a known customer has an issue', () => {
    it('publishes it once, with its customer', async () => {
      const customerId = customerIds[0] ?? '';
      await h.control.addRecords('customer_issues', [{ customer_id: customerId, kind: 'missing_document' }]);
      await h.poller().runOnce('customer_issues');
      await h.poller().runOnce('customer_issues');
      const events = await h.events('customer_issues');
      expect(events).toHaveLength(1);
      expect(events[0]?.data).toMatchObject({
        record: { customer_id: customerId, kind: 'missing_document' },
      });
    });
  });
});
