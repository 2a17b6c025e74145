import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { PagedResource } from '../../src/partner/endpoints.js';
import { dedupeRecords, walkPages } from '../../src/partner/pagination.js';
import type { ListPage, PartnerRecord } from '../../src/partner/schemas.js';
import type { PartnerResponse } from '../../src/partner/transport.js';

const logger = createLogger({ level: 'silent' });

/**
 * An in-memory list that pages like spec 4.5/4.6 (by id, desc or asc), with a hook that changes it
 * between two page reads.
 */
function buildList(options: {
  ids: number[];
  order: 'desc' | 'asc';
  between: (fetch: number, ids: number[]) => void;
}) {
  let ids = [...options.ids];
  let fetches = 0;
  return {
    current: () => ids,
    fetchPage: async (page: number, perPage: number): Promise<PartnerResponse<ListPage>> => {
      options.between(fetches++, ids);
      ids = [...new Set(ids)].sort((a, b) => (options.order === 'desc' ? b - a : a - b));
      const items: PartnerRecord[] = ids.slice((page - 1) * perPage, page * perPage).map((id) => ({ id }));
      const pageCount = Math.ceil(ids.length / perPage);
      return {
        data: {
          items,
          current_page: page,
          page_count: pageCount,
          total_count: ids.length,
          has_more: page < pageCount,
        },
        status: 200,
        requestId: `r${fetches}`,
        headers: new Headers(),
      };
    },
  };
}

async function walk(
  resource: PagedResource,
  list: ReturnType<typeof buildList>,
  perPage: number,
): Promise<PartnerRecord[]> {
  const out: PartnerRecord[] = [];
  for await (const r of dedupeRecords(
    walkPages({ resource, query: {}, perPage, fetchPage: list.fetchPage, logger }),
  ))
    out.push(r);
  return out;
}

describe('walkPages', () => {
  describe('when a record on a page already read is deleted before the next page', () => {
    it('still yields the record that slid back across the boundary', async () => {
      // desc ids 10..1, 3 per page: page 1 = 10,9,8. Deleting 9 moves 7 onto page 1.
      const list = buildList({
        ids: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        order: 'desc',
        between: (n, ids) => {
          if (n === 1) ids.splice(ids.indexOf(9), 1);
        },
      });
      const ids = (await walk('applications', list, 3)).map((r) => r.id);
      expect(ids).toContain(7);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort((a, b) => Number(a) - Number(b))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    });
  });

  describe('when records are created at the start while paging', () => {
    it('yields no record twice', async () => {
      const list = buildList({
        ids: [1, 2, 3, 4, 5, 6],
        order: 'desc',
        between: (n, ids) => {
          if (n === 1) ids.push(100, 101);
        },
      });
      const ids = (await walk('applications', list, 2)).map((r) => r.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const id of [1, 2, 3, 4, 5, 6]) expect(ids).toContain(id);
    });
  });

  describe('when records are created and deleted at random while paging', () => {
    it('never misses a record present during the whole walk, never repeats one', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 40 }),
          fc.integer({ min: 1, max: 7 }),
          fc.constantFrom('desc' as const, 'asc' as const),
          fc.array(
            fc.record({ deletes: fc.array(fc.nat(), { maxLength: 3 }), creates: fc.nat({ max: 3 }) }),
            {
              maxLength: 30,
            },
          ),
          async (size, perPage, order, changes) => {
            const initial = Array.from({ length: size }, (_, i) => i + 1);
            const deleted = new Set<number>();
            let nextId = 1000;
            const list = buildList({
              ids: initial,
              order,
              between: (n, ids) => {
                const change = n > 0 ? changes[n - 1] : undefined;
                if (!change) return;
                for (const d of change.deletes) {
                  if (ids.length === 0) break;
                  const [gone] = ids.splice(d % ids.length, 1);
                  deleted.add(gone!);
                }
                // asc lists (listings) get new records at the end, desc ones at the start.
                for (let i = 0; i < change.creates; i++) ids.push(nextId++);
              },
            });
            const seen = (await walk(order === 'desc' ? 'applications' : 'listings', list, perPage)).map(
              (r) => Number(r.id),
            );
            expect(new Set(seen).size).toBe(seen.length);
            for (const id of initial) if (!deleted.has(id)) expect(seen).toContain(id);
          },
        ),
        { numRuns: 2000 },
      );
    });
  });
});
