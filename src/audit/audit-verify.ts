import type { Db } from '../db/prisma.js';
import { entryHash, GENESIS_HASH } from './audit-chain.js';

/** The first entry that breaks the chain, and how. */
export interface ChainBreak {
  /** The entry's id (`head` when the newest entries are missing). */
  id: string;
  problem: string;
}

export interface ChainReport {
  ok: boolean;
  /** Chained entries checked. */
  checked: number;
  /** Entries written before the chain began (not covered by it). */
  legacy: number;
  /** Oldest-first pruning so far: the newest pruned entry, its hash and time. */
  prunedThrough: { id: string; at: Date | null } | null;
  /** The chain's newest entry: keep this hash elsewhere to detect a rewrite of the whole trail. */
  head: { id: string; hash: string } | null;
  firstBreak: ChainBreak | null;
}

const PAGE = 1000;

/**
 * Walks `audit_log` in id order from the first chained entry. The anchor is the hash of the
 * newest pruned entry (recorded by the delete trigger of migration 20261127300000), or the
 * genesis hash: so the chain verifies from its new first entry after an oldest-first prune, and a
 * deletion anywhere else (the middle, the newest entries) is named.
 */
export async function verifyAuditChain(db: Db, onProgress?: (checked: number) => void): Promise<ChainReport> {
  const chain = await db.auditChain.findUnique({ where: { id: 1 } });
  if (!chain) throw new Error('audit_chain has no row: run `rentbridge migrate`');
  const legacy = await db.auditEntry.count({ where: { id: { lte: chain.legacyThroughId } } });
  const report: ChainReport = {
    ok: true,
    checked: 0,
    legacy,
    prunedThrough: chain.prunedThroughId
      ? { id: String(chain.prunedThroughId), at: chain.prunedThroughAt }
      : null,
    head: chain.headId && chain.headHash ? { id: String(chain.headId), hash: chain.headHash } : null,
    firstBreak: null,
  };
  let prevHash = chain.prunedThroughHash ?? GENESIS_HASH;
  let prevId = chain.prunedThroughId ?? chain.legacyThroughId;
  let cursor = chain.legacyThroughId;
  const fail = (id: string, problem: string): ChainReport => ({
    ...report,
    ok: false,
    firstBreak: { id, problem },
  });
  for (;;) {
    const rows = await db.auditEntry.findMany({
      where: { id: { gt: cursor } },
      orderBy: { id: 'asc' },
      take: PAGE,
    });
    for (const row of rows) {
      const id = String(row.id);
      if (row.id <= prevId) {
        return fail(
          id,
          `entry #${id} remains although entries up to #${prevId} were deleted: a deletion that was not an oldest-first prune`,
        );
      }
      if (!row.hash || !row.prevHash)
        return fail(id, `entry #${id} carries no hash: written outside rentbridge`);
      if (row.prevHash !== prevHash) {
        return fail(
          id,
          `entry #${id} does not follow entry #${prevId}: an entry between them was deleted, or it was inserted out of order`,
        );
      }
      const computed = entryHash(row.prevHash, {
        id: row.id,
        at: row.at,
        actor: row.actor,
        action: row.action,
        target: row.target,
        reason: row.reason,
        details: row.details,
      });
      if (computed !== row.hash) return fail(id, `entry #${id} was changed after it was written`);
      prevHash = row.hash;
      prevId = row.id;
      report.checked += 1;
    }
    onProgress?.(report.checked);
    if (rows.length < PAGE) break;
    cursor = rows[rows.length - 1]!.id;
  }
  const headId = chain.headId ?? null;
  if (headId !== null && (headId !== prevId || chain.headHash !== prevHash)) {
    return fail('head', `the newest entries after #${prevId} (up to #${headId}) are missing: deleted`);
  }
  return report;
}
