import { createHash } from 'node:crypto';
import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';

type Tx = Prisma.TransactionClient;

/**
 * The hash chain of `audit_log` (docs/decisions/044-ops-access-and-audit-chain.md): each entry
 * stores the previous entry's hash and a SHA-256 of its own content and that previous hash. An
 * edited, deleted or out-of-order row breaks the chain, which `rentbridge audit verify` walks.
 */

/** The previous hash of the first entry ever chained. */
export const GENESIS_HASH = '0'.repeat(64);

/** What an entry's hash covers: every column but the hashes themselves. */
export interface AuditContent {
  id: bigint | number | string;
  at: Date;
  actor: string;
  action: string;
  target: string;
  reason: string | null;
  details: unknown;
}

/** JSON with object keys sorted at every depth: the same value always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** SHA-256 of the details' canonical JSON: what a version-2 entry's hash covers in their place. */
export function detailsDigest(details: unknown): string {
  return createHash('sha256').update(canonicalJson(details), 'utf8').digest('hex');
}

/** The hash of entries written since issue 51: the same content, with the details' digest in place of them. */
export const HASH_VERSION = 2;

export type ChainedContent = Omit<AuditContent, 'details'> & { detailsDigest: string };

/**
 * Version 2 (decision 053): the chain covers a digest of the details, so an erasure can empty them
 * and keep the digest, and the chain still verifies; a digest that no longer matches details that
 * were not erased is a change.
 */
export function entryHashV2(prevHash: string, entry: ChainedContent): string {
  const content = canonicalJson({
    v: 2,
    id: String(entry.id),
    at: entry.at.toISOString(),
    actor: entry.actor,
    action: entry.action,
    target: entry.target,
    reason: entry.reason,
    details_digest: entry.detailsDigest,
  });
  return createHash('sha256').update(`${prevHash}\n${content}`, 'utf8').digest('hex');
}

/** Version 1: entries chained before issue 51 cover their details whole. */
export function entryHash(prevHash: string, entry: AuditContent): string {
  const content = canonicalJson({
    id: String(entry.id),
    at: entry.at.toISOString(),
    actor: entry.actor,
    action: entry.action,
    target: entry.target,
    reason: entry.reason,
    details: entry.details,
  });
  return createHash('sha256').update(`${prevHash}\n${content}`, 'utf8').digest('hex');
}

export interface NewAuditEntry {
  actor: string;
  action: string;
  target: string;
  reason?: string | null;
  details?: unknown;
}

/**
 * Appends one chained entry. The chain's one `audit_chain` row is locked (FOR UPDATE) for the rest
 * of the transaction, so concurrent writers, in any process, append one after the other and never
 * fork the chain; the id is taken under that lock, so id order is chain order. Inside a caller's
 * transaction (a redrive) the entry commits or rolls back with it.
 */
export async function appendAudit(db: Db | Tx, entry: NewAuditEntry): Promise<void> {
  const run = async (tx: Tx): Promise<void> => {
    const [chain] = await tx.$queryRaw<{ head_hash: string | null }[]>`
      SELECT head_hash FROM audit_chain WHERE id = 1 FOR UPDATE`;
    if (!chain) throw new Error('audit_chain has no row: run `rentbridge migrate`');
    const [next] = await tx.$queryRaw<{ id: bigint }[]>`
      SELECT nextval(pg_get_serial_sequence('audit_log', 'id')) AS id`;
    const content: AuditContent = {
      id: next!.id,
      // Millisecond precision, as the column keeps it, so the stored row hashes the same.
      at: new Date(),
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      reason: entry.reason ?? null,
      // Dates and bigints become JSON-safe values, exactly as jsonb will give them back.
      details: JSON.parse(JSON.stringify(entry.details ?? {})) as unknown,
    };
    const prevHash = chain.head_hash ?? GENESIS_HASH;
    const digest = detailsDigest(content.details);
    const hash = entryHashV2(prevHash, { ...content, detailsDigest: digest });
    await tx.auditEntry.create({
      data: {
        id: next!.id,
        at: content.at,
        actor: content.actor,
        action: content.action,
        target: content.target,
        reason: content.reason,
        details: content.details as Prisma.InputJsonValue,
        prevHash,
        hash,
        hashVersion: HASH_VERSION,
        detailsDigest: digest,
      },
    });
    await tx.$executeRaw`UPDATE audit_chain SET head_id = ${next!.id}, head_hash = ${hash} WHERE id = 1`;
  };
  // Appends queue on the chain's row: wait for a connection and the lock longer than Prisma's 2 s / 5 s.
  if ('$transaction' in db) await db.$transaction(run, { maxWait: 30_000, timeout: 30_000 });
  else await run(db);
}
