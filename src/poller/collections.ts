import type { Resource } from '../partner/resources.js';

/**
 * How each collection is polled (spec 4.7). Date-filtered collections are read from the day the
 * previous successful pass started (inclusive whole UTC days); the others are read in full, which
 * also finds removed records.
 */
export type CollectionRule =
  | { kind: 'dated'; fromKey: string; toKey: string }
  | { kind: 'full' }
  /** `GET /bank_accounts`: one call, not paginated, read in full. */
  | { kind: 'bank_accounts' }
  /** `GET /customers/{id}/issues` for every known customer, read in full. */
  | { kind: 'customer_issues' };

export const COLLECTION_RULES: Record<Resource, CollectionRule> = {
  applications: { kind: 'dated', fromKey: 'last_updated_from_date', toKey: 'last_updated_to_date' },
  application_activity_logs: { kind: 'dated', fromKey: 'from_date', toKey: 'to_date' },
  properties: { kind: 'dated', fromKey: 'updated_at_from_date', toKey: 'updated_at_to_date' },
  units: { kind: 'dated', fromKey: 'updated_at_from_date', toKey: 'updated_at_to_date' },
  leads: { kind: 'dated', fromKey: 'updated_at_from_date', toKey: 'updated_at_to_date' },
  billing_statements: { kind: 'dated', fromKey: 'start_date', toKey: 'end_date' },
  billing_activities: { kind: 'dated', fromKey: 'start_date', toKey: 'end_date' },
  customers: { kind: 'full' },
  enrollments: { kind: 'full' },
  listings: { kind: 'full' },
  users: { kind: 'full' },
  magic_links: { kind: 'full' },
  roles: { kind: 'full' },
  bank_accounts: { kind: 'bank_accounts' },
  customer_issues: { kind: 'customer_issues' },
};

/**
 * Built-in intervals in seconds, used when `POLL_INTERVALS` names no interval for a resource:
 * applications move fastest (decisions wait on them), reference data barely moves, customer
 * issues cost a request per customer. Every other resource uses `POLL_INTERVAL_SECONDS` (default 300).
 */
export const DEFAULT_INTERVAL_SECONDS: Partial<Record<Resource, number>> = {
  applications: 60,
  roles: 900,
  listings: 900,
  users: 900,
  bank_accounts: 900,
  // One request per known customer (the API lists issues only per customer): thousands of
  // customers would spend minutes of the shared budget on every pass.
  customer_issues: 1800,
};

/** `POLL_INTERVALS[resource]` > the built-in default above > `POLL_INTERVAL_SECONDS`. */
export function intervalSeconds(
  resource: Resource,
  config: { POLL_INTERVAL_SECONDS: number; POLL_INTERVALS: Record<string, number> },
): number {
  return (
    config.POLL_INTERVALS[resource] ?? DEFAULT_INTERVAL_SECONDS[resource] ?? config.POLL_INTERVAL_SECONDS
  );
}

/** The UTC calendar date of an instant, as the date filters take it (YYYY-MM-DD). */
export function utcDate(at: Date): string {
  return at.toISOString().slice(0, 10);
}
