import type { Tx } from '../outbox/outbox-repository.js';

/**
 * The dedupe the receiver and the poller share: a version `(resource, id, updated_at)` is
 * published once, whoever saw it first. Call inside the transaction that enqueues the event.
 */

export type ChangeVia = 'webhook' | 'poll';

export interface VersionClaim {
  resource: string;
  recordId: string;
  updatedAt: string;
  status?: string | null;
  via: ChangeVia;
}

export interface ClaimResult {
  /** False when this version was already published: publish nothing. */
  isNew: boolean;
  /** The status the record had in the last version seen, when there was one. */
  previousStatus: string | null;
}

export async function claimVersion(tx: Tx, claim: VersionClaim): Promise<ClaimResult> {
  const inserted = await tx.$executeRaw`
    INSERT INTO published_versions (resource, record_id, updated_at, via)
    VALUES (${claim.resource}, ${claim.recordId}, ${claim.updatedAt}, ${claim.via})
    ON CONFLICT DO NOTHING`;
  if (inserted === 0) return { isNew: false, previousStatus: null };
  // Lock the record's row so two concurrent claims of different versions see each other's status.
  const previous = await tx.$queryRaw<{ status: string | null }[]>`
    SELECT status FROM known_records
    WHERE resource = ${claim.resource} AND record_id = ${claim.recordId}
    FOR UPDATE`;
  await tx.$executeRaw`
    INSERT INTO known_records (resource, record_id, updated_at, status, removed_at, seen_at)
    VALUES (${claim.resource}, ${claim.recordId}, ${claim.updatedAt}, ${claim.status ?? null}, NULL, now())
    ON CONFLICT (resource, record_id) DO UPDATE
      SET updated_at = EXCLUDED.updated_at, status = EXCLUDED.status, removed_at = NULL, seen_at = now()`;
  return { isNew: true, previousStatus: previous[0]?.status ?? null };
}
