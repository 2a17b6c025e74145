import type { ListEnvelope } from './partner-port.js';

/**
 * List pages read for snapshots, shared for a moment by every snapshot that needs them. The spec
 * has no single-record GET, so each snapshot costs a page of up to 1,000 records; consumers
 * writing to many records of the same page would spend most of the rate budget re-reading it.
 *
 * Why a shared page is still a sound snapshot: the snapshot only has to be read BEFORE the write.
 * The read-back says `not_applied` only if the record is unchanged since the snapshot, and any
 * change between an older snapshot and the write makes the verdict `unknown` (parked), never a
 * wrong `not_applied`. So a page is used only while young (`ttlMs`), and never for a record this
 * process has written to since the page was asked for; read-backs never use the cache.
 */
export interface SnapshotPageCache {
  /** The page under `key`, read now or shared with a read started less than `ttlMs` ago. */
  page(key: string, read: () => Promise<ListEnvelope>): Promise<{ envelope: ListEnvelope; askedAt: number }>;
  /** A write to the record just ended (answered or not): older pages no longer show it. */
  wrote(resource: string, id: string): void;
  /** Whether a page asked for at `askedAt` may serve as the snapshot of the record. */
  usable(resource: string, id: string, askedAt: number): boolean;
}

export interface SnapshotPageCacheOptions {
  /** How long a page is shared. Default 1000 ms. */
  ttlMs?: number;
  /** Pages kept at most. Default 100. */
  maxPages?: number;
}

export function createSnapshotPageCache(options: SnapshotPageCacheOptions = {}): SnapshotPageCache {
  const ttlMs = options.ttlMs ?? 1000;
  const maxPages = options.maxPages ?? 100;
  const pages = new Map<string, { askedAt: number; result: Promise<ListEnvelope> }>();
  const lastWrite = new Map<string, number>();
  return {
    page(key, read) {
      const now = Date.now();
      const hit = pages.get(key);
      if (hit && now - hit.askedAt < ttlMs)
        return hit.result.then((envelope) => ({ envelope, askedAt: hit.askedAt }));
      const result = read();
      pages.set(key, { askedAt: now, result });
      // A failed read is not shared.
      result.catch(() => pages.get(key)?.result === result && pages.delete(key));
      if (pages.size > maxPages) pages.delete(pages.keys().next().value!);
      return result.then((envelope) => ({ envelope, askedAt: now }));
    },
    wrote(resource, id) {
      const key = `${resource}/${id}`;
      lastWrite.delete(key); // re-insert: the map stays in write order for trimming
      lastWrite.set(key, Date.now());
      if (lastWrite.size > 10_000) lastWrite.delete(lastWrite.keys().next().value!);
    },
    usable(resource, id, askedAt) {
      const written = lastWrite.get(`${resource}/${id}`);
      // Strictly after: a page asked for in the same millisecond as the write may predate it.
      return written === undefined || askedAt > written;
    },
  };
}
