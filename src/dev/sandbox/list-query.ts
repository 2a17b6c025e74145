import { validationError } from './sandbox-error.js';
import type { SandboxRecord } from './record-store.js';

/** Spec 4.5 defaults and bounds. */
export const DEFAULT_PER_PAGE = 20;
export const MAX_PER_PAGE = 1000;

export interface Paging {
  page: number;
  perPage: number;
}

function single(value: unknown): unknown {
  return Array.isArray(value) ? value[value.length - 1] : value;
}

/** An integer query parameter, or an error message when it is not one. */
function integerParam(query: Record<string, unknown>, name: string, errors: string[]): number | undefined {
  const raw = single(query[name]);
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^-?\d+$/.test(raw.trim())) {
    errors.push(`${name} must be an integer`);
    return undefined;
  }
  return Number(raw.trim());
}

/**
 * Spec 4.5: `page` >= 1 (default 1); `per_page` 1 to 1000 (default 20), above 1000 clamped;
 * below 1 or not an integer is `400 validation_error` with one message per parameter.
 */
export function parsePaging(query: Record<string, unknown>): Paging {
  const errors: string[] = [];
  const page = integerParam(query, 'page', errors);
  const perPage = integerParam(query, 'per_page', errors);
  if (page !== undefined && page < 1) errors.push('page must be greater than or equal to 1');
  if (perPage !== undefined && perPage < 1) errors.push('per_page must be greater than or equal to 1');
  if (errors.length > 0) throw validationError(errors);
  return { page: page ?? 1, perPage: Math.min(perPage ?? DEFAULT_PER_PAGE, MAX_PER_PAGE) };
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Milliseconds at 00:00:00.000 UTC of a `YYYY-MM-DD` day, or undefined when it is no real day. */
function dayStart(text: string): number | undefined {
  const m = DAY.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = Date.UTC(year, month - 1, day);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== year || back.getUTCMonth() !== month - 1 || back.getUTCDate() !== day)
    return undefined;
  return ms;
}

export interface DateRange {
  /** Inclusive bounds in milliseconds; undefined = open. */
  from: number | undefined;
  to: number | undefined;
}

/**
 * Spec 4.7: inclusive whole UTC days; the from-date starts at 00:00:00, the to-date ends at
 * 23:59:59(.999). A malformed date is `400 validation_error`.
 */
export function parseDateRange(query: Record<string, unknown>, fromName: string, toName: string): DateRange {
  const errors: string[] = [];
  const read = (name: string): number | undefined => {
    const raw = single(query[name]);
    if (raw === undefined || raw === '') return undefined;
    const start = typeof raw === 'string' ? dayStart(raw) : undefined;
    if (start === undefined) errors.push(`${name} must be a date in the form YYYY-MM-DD`);
    return start;
  };
  const from = read(fromName);
  const toStart = read(toName);
  if (errors.length > 0) throw validationError(errors);
  return { from, to: toStart === undefined ? undefined : toStart + 86_400_000 - 1 };
}

/** Keeps the records whose `updated_at` falls in the range. */
export function inRange(records: SandboxRecord[], range: DateRange): SandboxRecord[] {
  if (range.from === undefined && range.to === undefined) return records;
  const from = range.from ?? -Infinity;
  const to = range.to ?? Infinity;
  return records.filter((record) => {
    const at = Date.parse(record.updated_at);
    return at >= from && at <= to;
  });
}

/** The list envelope of spec 2.3 for one page of an ordered, filtered collection. */
export function pageOf(records: SandboxRecord[], paging: Paging) {
  const total = records.length;
  const pageCount = Math.ceil(total / paging.perPage);
  const start = (paging.page - 1) * paging.perPage;
  return {
    object: 'list' as const,
    items: records.slice(start, start + paging.perPage),
    current_page: paging.page,
    page_count: pageCount,
    total_count: total,
    has_more: paging.page < pageCount,
  };
}
