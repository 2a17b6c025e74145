import { describe, expect, it } from 'vitest';
import { createSnapshotPageCache } from '../../src/guard/read-backs/read-back.js';

const page = (ids: number[]) => ({ items: ids.map((id) => ({ id })), has_more: false });

describe('snapshot page cache', () => {
  describe('when several snapshots need the same page at once', () => {
    it('reads it once', async () => {
      const cache = createSnapshotPageCache({ ttlMs: 10_000 });
      let reads = 0;
      const read = async () => (reads++, page([1, 2, 3]));
      await Promise.all([cache.page('a', read), cache.page('a', read), cache.page('a', read)]);
      expect(reads).toBe(1);
    });
  });

  describe('when the page is older than its time to live', () => {
    it('reads it again', async () => {
      const cache = createSnapshotPageCache({ ttlMs: 0 });
      let reads = 0;
      const read = async () => (reads++, page([1]));
      await cache.page('a', read);
      await cache.page('a', read);
      expect(reads).toBe(2);
    });
  });

  describe('when this process wrote to a record after the page was asked for', () => {
    it('does not let the page serve as that record’s snapshot', async () => {
      const cache = createSnapshotPageCache({ ttlMs: 10_000 });
      const { askedAt } = await cache.page('a', async () => page([1, 2]));
      await new Promise((r) => setTimeout(r, 2));
      cache.wrote('applications', '1');
      expect(cache.usable('applications', '1', askedAt)).toBe(false);
      expect(cache.usable('applications', '2', askedAt)).toBe(true);
    });
  });

  describe('when a read fails', () => {
    it('is not shared with the next snapshot', async () => {
      const cache = createSnapshotPageCache({ ttlMs: 10_000 });
      await expect(cache.page('a', () => Promise.reject(new Error('503')))).rejects.toThrow('503');
      await expect(cache.page('a', async () => page([7]))).resolves.toMatchObject({
        envelope: { items: [{ id: 7 }] },
      });
    });
  });
});
