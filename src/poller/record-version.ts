import { createHash } from 'node:crypto';

/**
 * The `(id, updated_at)` a polled record is deduplicated on. Bank accounts and customer issues
 * are not guaranteed to carry them (the spec does not show their fields), so when one is absent
 * it is derived from the record's content:
 * - no `updated_at`: `sha256:<hash of the record>`, so any change of content is a new version and
 *   an unchanged record is never published twice;
 * - no `id`: `sha256:<hash of the scope and the record>`; such a record cannot be followed across
 *   changes, so a change reads as a removal of the old one and a new record.
 * Derived values are written into the published record (fields `id`, `updated_at`) so consumers
 * see the same key the dedupe used.
 */
export function withVersion(
  record: Record<string, unknown>,
  scope = '',
): Record<string, unknown> & { id: string; updated_at: string } {
  const hash = contentHash(record);
  const id = hasValue(record.id) ? String(record.id) : `sha256:${contentHash({ scope, hash })}`;
  const updatedAt = hasValue(record.updated_at) ? String(record.updated_at) : `sha256:${hash}`;
  return { ...record, id, updated_at: updatedAt };
}

function hasValue(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '';
}

/** A hash that does not depend on key order. */
export function contentHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 32);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
