import type { Resource } from '../../partner/resources.js';
import { RESOURCES } from '../../partner/resources.js';

/** A stored record: any fields, plus the integer id and the two timestamps every record has. */
export type SandboxRecord = Record<string, unknown> & { id: number; created_at: string; updated_at: string };

/** How precise the `created_at` given to a new record is (sandbox config `created_at_precision`). */
export type CreatedAtPrecision = 'milliseconds' | 'seconds';

/** `2026-11-25T04:16:22.123Z` to the second: `2026-11-25T04:16:22Z`. */
export function toPrecision(iso: string, precision: CreatedAtPrecision): string {
  return precision === 'seconds' ? iso.replace(/\.\d+Z$/, 'Z') : iso;
}

/** How many derived views (sorted/filtered orders) a collection keeps before starting over. */
const MAX_VIEWS = 64;

/**
 * One collection in memory. Lists ask for derived views (a sort order, a filter) by key; the
 * views are cached until the collection changes, so paging through 100,000 records costs one
 * sort, not one per page.
 */
export class Collection {
  private readonly byId = new Map<number, SandboxRecord>();
  private nextId = 1;
  private readonly views = new Map<string, SandboxRecord[]>();
  /** Bumped on every change: a saved copy (src/dev/sandbox/sandbox-snapshot.ts) knows when it is stale. */
  revision = 0;

  constructor(private readonly precision: () => CreatedAtPrecision = () => 'milliseconds') {}

  get size(): number {
    return this.byId.size;
  }

  get(id: number): SandboxRecord | undefined {
    return this.byId.get(id);
  }

  values(): IterableIterator<SandboxRecord> {
    return this.byId.values();
  }

  /** Stores a record as given; fills in `id`, `created_at`, `updated_at` when absent. */
  insert(fields: Record<string, unknown>, now = new Date().toISOString()): SandboxRecord {
    const given = fields.id;
    const id = typeof given === 'number' && Number.isInteger(given) ? given : this.nextId;
    if (id >= this.nextId) this.nextId = id + 1;
    const givenCreated = typeof fields.created_at === 'string';
    const created = givenCreated ? (fields.created_at as string) : toPrecision(now, this.precision());
    const record: SandboxRecord = {
      ...fields,
      id,
      created_at: created,
      // A created_at cut to the second keeps updated_at precise (only created_at was asked for).
      updated_at: typeof fields.updated_at === 'string' ? fields.updated_at : givenCreated ? created : now,
    };
    this.byId.set(id, record);
    this.changedNow();
    return record;
  }

  /** Merges fields into a record; `updated_at` moves to now unless given. */
  patch(
    id: number,
    fields: Record<string, unknown>,
    now = new Date().toISOString(),
  ): SandboxRecord | undefined {
    const current = this.byId.get(id);
    if (!current) return undefined;
    const record: SandboxRecord = {
      ...current,
      ...fields,
      id,
      created_at: typeof fields.created_at === 'string' ? fields.created_at : current.created_at,
      updated_at: typeof fields.updated_at === 'string' ? fields.updated_at : now,
    };
    this.byId.set(id, record);
    this.changedNow();
    return record;
  }

  delete(id: number): SandboxRecord | undefined {
    const current = this.byId.get(id);
    if (!current) return undefined;
    this.byId.delete(id);
    this.changedNow();
    return current;
  }

  private changedNow(): void {
    this.views.clear();
    this.revision += 1;
  }

  /** Everything the collection holds, its next id included (a saved sandbox). */
  dump(): { nextId: number; records: SandboxRecord[] } {
    return { nextId: this.nextId, records: [...this.byId.values()] };
  }

  /** Puts back what `dump()` gave: the records as they were, ids going on where they stopped. */
  load(saved: { nextId: number; records: SandboxRecord[] }): void {
    this.byId.clear();
    this.nextId = Math.max(saved.nextId, 1);
    for (const record of saved.records) {
      this.byId.set(record.id, record);
      if (record.id >= this.nextId) this.nextId = record.id + 1;
    }
    this.changedNow();
  }

  /** A derived view of the records, cached by key until the collection changes. */
  view(key: string, build: (records: SandboxRecord[]) => SandboxRecord[]): SandboxRecord[] {
    const cached = this.views.get(key);
    if (cached) return cached;
    if (this.views.size >= MAX_VIEWS) this.views.clear();
    const built = build([...this.byId.values()]);
    this.views.set(key, built);
    return built;
  }
}

/** Every collection of the spec (2.1), by the snake_case resource names of DESIGN.md. */
export class RecordStore {
  private readonly collections = new Map<Resource, Collection>();

  constructor(precision: () => CreatedAtPrecision = () => 'milliseconds') {
    for (const resource of RESOURCES) this.collections.set(resource, new Collection(precision));
  }

  collection(resource: Resource): Collection {
    const found = this.collections.get(resource);
    if (!found) throw new Error(`unknown resource ${resource}`);
    return found;
  }

  /** The sum of the collections' revisions: it moves whenever any record changes. */
  get revision(): number {
    let n = 0;
    for (const c of this.collections.values()) n += c.revision;
    return n;
  }

  dump(): Record<string, { nextId: number; records: SandboxRecord[] }> {
    return Object.fromEntries([...this.collections].map(([resource, c]) => [resource, c.dump()]));
  }

  /** Puts back a `dump()`; a collection it does not name stays empty. */
  load(saved: Record<string, { nextId: number; records: SandboxRecord[] } | undefined>): void {
    for (const [resource, c] of this.collections) c.load(saved[resource] ?? { nextId: 1, records: [] });
  }
}
