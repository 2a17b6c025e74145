import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
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
  | 'reconcile_settle';

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

export async function writeAudit(
  tx: Db | Tx,
  entry: { actor: string; action: AuditAction; target: string; reason?: string | null; details?: unknown },
): Promise<void> {
  await tx.auditEntry.create({
    data: {
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      reason: entry.reason ?? null,
      // Dates and bigints become JSON-safe values.
      details: JSON.parse(JSON.stringify(entry.details ?? {})) as Prisma.InputJsonValue,
    },
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
