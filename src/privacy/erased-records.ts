import { createHash } from 'node:crypto';
import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import { metrics } from '../metrics.js';

/**
 * An erased person stays erased (docs/privacy.md, decision 053): rentbridge keeps only a digest of
 * the e-mail and the Partner ids it erased (`erased_records`), and every path that mirrors the
 * platform's records into rentbridge (the poller, the platform's webhooks, `rentbridge resync`, the
 * stored list reads) leaves those records out while the platform still holds them. What is left out
 * is counted (`rentbridge_erased_records_skipped_total`), never named.
 */

/** SHA-256 of the e-mail, trimmed and lower-cased (the Partner API keeps e-mails unique without case). */
export function emailDigest(email: string): string {
  return createHash('sha256').update(`email:${email.trim().toLowerCase()}`, 'utf8').digest('hex');
}

/** Where an erased record was left out. */
export type SkippedPath = 'webhook' | 'poll' | 'resync';

type Client = Db | Prisma.TransactionClient;

/** The ids among `ids` of `resource` that were erased; one lookup by the table's key. */
export async function erasedAmong(
  db: Client,
  resource: string,
  ids: readonly string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.$queryRaw<{ record_id: string }[]>`
    SELECT record_id FROM erased_records WHERE resource = ${resource} AND record_id = ANY(${[...ids]}::text[])`;
  return new Set(rows.map((r) => r.record_id));
}

/**
 * The items whose record was erased left out, counted by path. `key` gives an item's resource and
 * record id; the lookup is one statement per resource present.
 */
export async function withoutErased<T>(
  db: Client,
  items: readonly T[],
  key: (item: T) => { resource: string; id: string },
  path: SkippedPath,
): Promise<T[]> {
  if (items.length === 0) return [];
  const byResource = new Map<string, string[]>();
  for (const item of items) {
    const { resource, id } = key(item);
    byResource.set(resource, [...(byResource.get(resource) ?? []), id]);
  }
  const erased = new Set<string>();
  for (const [resource, ids] of byResource) {
    for (const id of await erasedAmong(db, resource, ids)) erased.add(`${resource}\u0000${id}`);
  }
  if (erased.size === 0) return [...items];
  const kept = items.filter((item) => {
    const { resource, id } = key(item);
    return !erased.has(`${resource}\u0000${id}`);
  });
  metrics.erasedSkipped.inc({ path }, items.length - kept.length);
  return kept;
}
