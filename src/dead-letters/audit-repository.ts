import type { Prisma } from '@prisma/client';
import { appendAudit } from '../audit/audit-chain.js';
import type { Db } from '../db/prisma.js';
import { maskPersonal, maskText } from '../personal-data.js';
import type { AuditFilters } from './dead-letter-filters.js';

type Tx = Prisma.TransactionClient;

/** Actions written to `audit_log` (who, when, what, why). */
export type AuditAction =
  | 'redrive'
  | 'redrive_failed'
  | 'close_applied'
  | 'discard'
  | 'correct'
  /** Reconciliation settled a parked command from the platform's records (issue 45). */
  | 'reconcile_settle'
  | 'callback_redeliver'
  | 'callback_enable'
  | 'forbidden'
  | 'break_glass'
  | 'sign_in'
  | 'sign_in_refused'
  | 'sign_out'
  | 'token_create'
  | 'token_revoke'
  /** Personal data shown unmasked to one person for one item, with their reason (decision 052). */
  | 'reveal';

export interface AuditEntry {
  id: number;
  at: Date;
  actor: string;
  action: string;
  target: string;
  reason: string | null;
  details: Record<string, unknown>;
}

export function deadLetterTarget(id: number): string {
  return `dead_letter:${id}`;
}

/**
 * Appends a chained entry (src/audit/audit-chain.ts), in the caller's transaction when given one.
 * No personal value is kept whole in the audit (decision 052): the target, the reason and the
 * details are masked here, for every caller (a guard row's target is a registration's e-mail).
 */
export async function writeAudit(
  tx: Db | Tx,
  entry: { actor: string; action: AuditAction; target: string; reason?: string | null; details?: unknown },
): Promise<void> {
  await appendAudit(tx, {
    ...entry,
    target: maskText(entry.target),
    ...(entry.reason != null && { reason: maskText(entry.reason) }),
    ...(entry.details !== undefined && { details: maskPersonal(entry.details) }),
  });
}

export async function listAudit(db: Db, options: Partial<AuditFilters> = {}): Promise<AuditEntry[]> {
  const rows = await db.auditEntry.findMany({
    where: {
      ...(options.target ? { target: options.target } : {}),
      ...(options.actor ? { actor: options.actor } : {}),
      ...(options.action ? { action: options.action } : {}),
      ...(options.since || options.until
        ? {
            at: {
              ...(options.since ? { gte: options.since } : {}),
              ...(options.until ? { lte: options.until } : {}),
            },
          }
        : {}),
    },
    orderBy: { id: 'desc' },
    take: options.limit ?? 100,
  });
  return rows.map((r) => ({
    id: Number(r.id),
    at: r.at,
    actor: r.actor,
    action: r.action,
    target: r.target,
    reason: r.reason,
    details: (r.details ?? {}) as Record<string, unknown>,
  }));
}
