import type { Db } from '../../db/prisma.js';

/**
 * The latest list read of each record, shared by every process through PostgreSQL (issue 43,
 * docs/decisions/043-snapshot-from-the-latest-read.md). A snapshot only has to be read before the
 * write (see read-back.ts): a read the poller or another consumer made a minute ago is
 * as sound a baseline as a read made now, as long as
 *
 * - it is younger than `maxAgeMs` (SNAPSHOT_MAX_AGE_MS): an older baseline is refused and the
 *   record re-read, which bounds the chance that another system changed the record in between
 *   (that makes the verdict `unknown`, never a wrong `not_applied`);
 * - it was asked for after the last write of ours to the record ended (`wrote_at`): a read from
 *   before our own write would count that write's effect as news;
 * - it was read with the same key (a scoped key sees another list).
 *
 * Otherwise the row's page, when the read was of the unfiltered list, is where the snapshot looks
 * first: one request instead of paging from page 1. Times are the database's clock; a process
 * converts its own clock with an offset measured against it, on the safe side (earlier).
 */
export interface StoredRead {
  record: Record<string, unknown> | null;
  page: number | null;
  perPage: number | null;
  /** When the read was asked for, on this process's clock (ms); null when none is stored. */
  askedAt: number | null;
  /** Whether the read may serve as the snapshot now (young enough, after our last write). */
  usable: boolean;
}

export interface SnapshotStore {
  readonly maxAgeMs: number;
  find(resource: string, id: string): Promise<StoredRead | null>;
  /** Every record of a page asked for at `askedAt` (this process's clock, ms). */
  savePage(
    resource: string,
    items: ReadonlyArray<Record<string, unknown>>,
    askedAt: number,
    position?: { page: number; perPage: number },
  ): Promise<void>;
  /** A write of ours to the record just ended (answered or not): earlier reads no longer serve. */
  wrote(resource: string, id: string): Promise<void>;
  /**
   * A write of ours for a target just ended, whatever key made it: noted for every key's
   * snapshots (`wroteSince`). Commands for one target run in order, but may act with other keys.
   */
  wroteFor(resource: string, target: string): Promise<void>;
  /** Whether a write of ours for the target (`wroteFor`) ended after `since` (this process's clock, ms). */
  wroteSince(resource: string, target: string, since: number): Promise<boolean>;
}

export interface SnapshotStoreOptions {
  db: Db;
  /** The key the reads were made with ('deployment' or a source key's id). */
  keyId: string;
  /** SNAPSHOT_MAX_AGE_MS. */
  maxAgeMs: number;
}

const OFFSET_REFRESH_MS = 60_000;
/** The key_id under which writes for a target are noted for every key (`wroteFor`). */
const ANY_KEY = '*';
/** This process's writes for targets, whatever key made them (see `wroteFor`). */
const sharedWrites = new Map<string, number>();

/** Database clock − this process's clock, minus the measurement's uncertainty (so, on the early side). */
function clockOffset(db: Db) {
  let offset: { value: number; at: number } | null = null;
  return async (): Promise<number> => {
    if (offset && Date.now() - offset.at < OFFSET_REFRESH_MS) return offset.value;
    const [row] = await db.$queryRaw<{ now: Date }[]>`SELECT clock_timestamp() AS now`;
    const after = Date.now();
    // The database's instant lies between before and after on our clock: taking `after` as its
    // local twin makes converted times never later than the truth.
    offset = { value: row!.now.getTime() - after, at: after };
    return offset.value;
  };
}

export function createSnapshotStore(options: SnapshotStoreOptions): SnapshotStore {
  const { db, keyId, maxAgeMs } = options;
  const offset = clockOffset(db);
  // This process's own writes, kept here too: a write whose `wrote_at` could not be stored still
  // keeps this process (which owns the record's partition) from using an earlier read.
  const lastWrite = new Map<string, number>();
  return {
    maxAgeMs,

    async find(resource, id) {
      const [row] = await db.$queryRaw<
        {
          record: Record<string, unknown> | null;
          page: number | null;
          per_page: number | null;
          asked_at: Date | null;
          usable: boolean;
          db_now: Date;
        }[]
      >`
        SELECT record, page, per_page, asked_at, clock_timestamp() AS db_now,
               (record IS NOT NULL AND asked_at IS NOT NULL
                AND asked_at > clock_timestamp() - make_interval(secs => ${maxAgeMs / 1000}::float8)
                AND (wrote_at IS NULL OR asked_at > wrote_at)) AS usable
        FROM snapshot_reads WHERE key_id = ${keyId} AND resource = ${resource} AND record_id = ${id}`;
      if (!row) return null;
      const skew = row.db_now.getTime() - Date.now();
      const askedAt = row.asked_at ? row.asked_at.getTime() - skew : null;
      const wrote = lastWrite.get(`${resource}/${id}`);
      return {
        record: row.record,
        page: row.page,
        perPage: row.per_page,
        askedAt,
        usable: row.usable && (wrote === undefined || (askedAt !== null && askedAt > wrote)),
      };
    },

    async savePage(resource, items, askedAt, position) {
      if (items.length === 0) return;
      const at = new Date(askedAt + (await offset()));
      // One row per id (a drift-safe re-read may repeat a record): an upsert touches a row once.
      const byId = new Map(items.filter((r) => r.id != null).map((r) => [String(r.id), r]));
      const rows = JSON.stringify([...byId.values()]);
      await db.$executeRaw`
        INSERT INTO snapshot_reads (key_id, resource, record_id, page, per_page, record, asked_at)
        SELECT ${keyId}, ${resource}, r.value->>'id', ${position?.page ?? null}::int,
               ${position?.perPage ?? null}::int, r.value, ${at}::timestamptz
        FROM jsonb_array_elements(${rows}::jsonb) AS r
        -- A record erased on request is not stored again while the platform still holds it.
        WHERE NOT EXISTS (SELECT 1 FROM erased_records e
                           WHERE e.resource = ${resource} AND e.record_id = r.value->>'id')
        ON CONFLICT (key_id, resource, record_id) DO UPDATE
        SET record = EXCLUDED.record, asked_at = EXCLUDED.asked_at,
            page = coalesce(EXCLUDED.page, snapshot_reads.page),
            per_page = CASE WHEN EXCLUDED.page IS NULL THEN snapshot_reads.per_page ELSE EXCLUDED.per_page END
        WHERE snapshot_reads.asked_at IS NULL OR snapshot_reads.asked_at < EXCLUDED.asked_at`;
    },

    async wroteFor(resource, target) {
      sharedWrites.delete(`${resource}/${target}`);
      sharedWrites.set(`${resource}/${target}`, Date.now());
      if (sharedWrites.size > 10_000) sharedWrites.delete(sharedWrites.keys().next().value!);
      await db.$executeRaw`
        INSERT INTO snapshot_reads (key_id, resource, record_id, wrote_at)
        VALUES (${ANY_KEY}, ${resource}, ${target}, clock_timestamp())
        ON CONFLICT (key_id, resource, record_id) DO UPDATE SET wrote_at = EXCLUDED.wrote_at`.catch(
        () => undefined, // kept in sharedWrites above
      );
    },

    async wroteSince(resource, target, since) {
      const mine = sharedWrites.get(`${resource}/${target}`);
      if (mine !== undefined && mine >= since) return true;
      const [row] = await db.$queryRaw<{ after: boolean }[]>`
        SELECT wrote_at >= ${new Date(since + (await offset()))}::timestamptz AS after
        FROM snapshot_reads WHERE key_id = ${ANY_KEY} AND resource = ${resource} AND record_id = ${target}`;
      return row?.after === true;
    },

    async wrote(resource, id) {
      const key = `${resource}/${id}`;
      lastWrite.delete(key); // re-insert: the map stays in write order for trimming
      lastWrite.set(key, Date.now());
      if (lastWrite.size > 10_000) lastWrite.delete(lastWrite.keys().next().value!);
      await db.$executeRaw`
        INSERT INTO snapshot_reads (key_id, resource, record_id, wrote_at)
        VALUES (${keyId}, ${resource}, ${id}, clock_timestamp())
        ON CONFLICT (key_id, resource, record_id) DO UPDATE SET wrote_at = EXCLUDED.wrote_at`.catch(
        () => undefined, // kept in lastWrite above; the next write stores it again
      );
    },
  };
}
