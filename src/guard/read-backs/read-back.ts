import type { GuardPartner, ListEnvelope, PartnerResult } from './partner-port.js';

/**
 * Read-back: the spec has no single-record GET and accepts no idempotency key, so the guard
 * learns whether a write landed by reading the target through the lists and comparing it with
 * the snapshot taken just before the write. Each command type has its strategy; the guard only
 * sees this interface.
 */
export const VERDICTS = ['applied', 'not_applied', 'unknown'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** The target as read just before a write (stored on the guard row, so a restart can use it). */
export interface Snapshot {
  found: boolean;
  status: string | null;
  updated_at: string | null;
  /** When the snapshot was read (ISO); a write made after it moves updated_at to that day or later. */
  taken_at: string;
  /** Strategy-specific facts, e.g. how many matching payments the enrollment already held. */
  [fact: string]: unknown;
}

export interface ReadContext {
  /** The X-Request-Id of the next read (derived from the command id). */
  nextReadId(): string;
  /**
   * A strategy that answers `unknown` because the record lacks the evidence its rule needs (a
   * field missing, a shape it does not recognise) says what was missing here: the reason goes
   * into the `unverified` outcome and dead letter. Optional to call.
   */
  missing?(evidence: string): void;
}

export interface ReadBackStrategy<C> {
  /** Reads the target's state just before a write. */
  snapshot(command: C, ctx: ReadContext): Promise<Snapshot>;
  /**
   * Did the write land? `applied`: the target reached the command's effect; `not_applied`: the
   * target is provably unchanged since the snapshot (positive evidence: the fields the rule
   * reads are there and equal); `unknown`: anything else, including a record that lacks the
   * evidence the rule needs (never guessed; say what was missing with `ctx.missing`). The guard
   * itself makes sure a `not_applied` counts only once the processing bound has passed.
   */
  verdict(command: C, snapshot: Snapshot, ctx: ReadContext): Promise<Verdict>;
  /** The write itself, with the attempt's request id. */
  write(command: C, requestId: string): Promise<PartnerResult>;
}

type PartnerRecord = Record<string, unknown>;

/** Upper bound on pages read to find one record: 1,000 pages of 1,000 records. */
const MAX_PAGES = 1000;

/**
 * Pages through a list (newest first, per_page 1000) until the record with `id` is found. With
 * `cache` (snapshots only), pages are shared; a record not found that way is looked for again
 * with fresh pages, so a page shifted by a deletion between two shared pages cannot hide it.
 */
export async function findRecord(
  partner: GuardPartner,
  resource: 'applications' | 'enrollments',
  id: string,
  query: Record<string, string | number>,
  ctx: ReadContext,
  cache?: SnapshotPageCache,
): Promise<PartnerRecord | null> {
  const fetchPage = async (page: number) =>
    (
      await partner.listPage(
        resource,
        { ...query, page, per_page: 1000 },
        { lane: 'readback', requestId: ctx.nextReadId() },
      )
    ).data as ListEnvelope;
  for (let page = 1; page <= MAX_PAGES; page++) {
    let envelope: ListEnvelope;
    if (cache) {
      const shared = await cache.page(
        `${resource}?${new URLSearchParams({ ...query, page: String(page) } as Record<string, string>)}`,
        () => fetchPage(page),
      );
      envelope = cache.usable(resource, id, shared.askedAt) ? shared.envelope : await fetchPage(page);
    } else {
      envelope = await fetchPage(page);
    }
    const hit = envelope.items.find((r) => String(r.id) === id);
    if (hit) return hit;
    const more = envelope.has_more ?? (envelope.page_count != null && page < envelope.page_count);
    if (!more || envelope.items.length === 0) break;
  }
  return cache ? findRecord(partner, resource, id, query, ctx) : null;
}

function str(v: unknown): string | null {
  return v == null ? null : String(v);
}

/** Same instant, whatever the formatting of the two timestamps. */
export function sameTime(a: string | null, b: string | null): boolean {
  if (a == null || b == null) return a === b;
  const ta = Date.parse(a);
  const tb = Date.parse(b);
  return Number.isNaN(ta) || Number.isNaN(tb) ? a === b : ta === tb;
}

/** The UTC day of an instant, as the list date filters read it (spec 4.7). */
export function utcDay(iso: string): string {
  return new Date(iso).toISOString().slice(0, 10);
}

export function baseSnapshot(record: PartnerRecord | null): Snapshot {
  return {
    found: record != null,
    status: str(record?.status),
    updated_at: str(record?.updated_at),
    taken_at: new Date().toISOString(),
  };
}

/** The snapshot's fact naming the Partner API key that read it (never the key itself). */
export const SNAPSHOT_KEY_FACT = 'partner_key';

/**
 * A read-back strategy whose snapshots say which Partner API key read them (issue 34). A scoped key
 * sees another list than the deployment key (spec 5.9), so a read-back compares like with like
 * only when it reads with the key the snapshot was read with. Within one process a command always
 * acts with one key; the key can differ only when PMS_PARTNER_KEYS changed while the command was
 * in flight (a restart between its snapshot and its read-back). Then the snapshot is no evidence:
 * the verdict is `unknown`, saying why, and never a guess from two different views. A snapshot
 * stored before snapshots named their key is read as before.
 */
export function keyPinnedReadBack<C>(strategy: ReadBackStrategy<C>, keyId: string): ReadBackStrategy<C> {
  return {
    async snapshot(command, ctx) {
      return { ...(await strategy.snapshot(command, ctx)), [SNAPSHOT_KEY_FACT]: keyId };
    },
    verdict(command, snapshot, ctx) {
      const readWith = snapshot[SNAPSHOT_KEY_FACT];
      if (typeof readWith === 'string' && readWith !== keyId) {
        ctx.missing?.(
          `the snapshot was read with another Partner API key (${readWith}) than the read-back (${keyId}): ` +
            'PMS_PARTNER_KEYS changed while the command was in flight, and two keys may see different lists',
        );
        return Promise.resolve('unknown');
      }
      return strategy.verdict(command, snapshot, ctx);
    },
    write: (command, requestId) => strategy.write(command, requestId),
  };
}

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
