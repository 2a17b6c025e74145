import { validationError } from './sandbox-error.js';
import type { SandboxRecord } from './record-store.js';

/** A total order of a collection: a cache key and a comparator that always ends with `id`. */
export interface Order {
  key: string;
  compare: (a: SandboxRecord, b: SandboxRecord) => number;
}

function text(value: unknown): string {
  return value == null ? '' : String(value);
}

/** Spec 4.6.2: newest first. */
export const DESC_ID: Order = { key: 'id:desc', compare: (a, b) => b.id - a.id };
/** Spec 4.6.3: listings. */
export const ASC_ID: Order = { key: 'id:asc', compare: (a, b) => a.id - b.id };

/** Spec 4.6.3: ascending by a text field (units `title`, roles `name`), ties by ascending id. */
export function ascendingBy(field: string): Order {
  return {
    key: `${field}:asc`,
    compare: (a, b) => {
      const x = text(a[field]);
      const y = text(b[field]);
      return x < y ? -1 : x > y ? 1 : a.id - b.id;
    },
  };
}

/** The fields the customer list may be ordered by (spec 4.2; `created_at` is the default). */
export const CUSTOMER_ORDER_FIELDS = ['created_at', 'updated_at', 'id', 'email', 'first_name', 'last_name'];
const TIMESTAMP_FIELDS = new Set(['created_at', 'updated_at']);

function sortValue(field: string, record: SandboxRecord): number | string {
  const value = record[field];
  if (TIMESTAMP_FIELDS.has(field)) return Date.parse(String(value));
  if (typeof value === 'number') return value;
  return text(value);
}

/**
 * Spec 4.2 / 4.6.3: the customer list's `order_by` (default `created_at`) and
 * `order_direction` (default `desc`); ties are broken by `id` ("with ties broken by id", direction
 * not shown): in the list's own direction, or the one `tieBreak` (sandbox config `tie_break`) names.
 */
export function customerOrder(
  query: Record<string, unknown>,
  tieBreak: 'ascending' | 'descending' | null = null,
): Order {
  const errors: string[] = [];
  const by = query.order_by === undefined ? 'created_at' : query.order_by;
  const direction = query.order_direction === undefined ? 'desc' : query.order_direction;
  if (typeof by !== 'string' || !CUSTOMER_ORDER_FIELDS.includes(by))
    errors.push(`order_by must be one of ${CUSTOMER_ORDER_FIELDS.join(', ')}`);
  if (direction !== 'asc' && direction !== 'desc') errors.push('order_direction must be asc or desc');
  if (errors.length > 0) throw validationError(errors);
  const field = by as string;
  const sign = direction === 'asc' ? 1 : -1;
  const tieSign = tieBreak === null ? sign : tieBreak === 'ascending' ? 1 : -1;
  return {
    key: `${field}:${direction as string}:${tieSign}`,
    compare: (a, b) => {
      const x = sortValue(field, a);
      const y = sortValue(field, b);
      if (x < y) return -sign;
      if (x > y) return sign;
      return tieSign * (a.id - b.id);
    },
  };
}
