import type { Db } from '../db/prisma.js';
import { detailsDigest, entryHash, entryHashV2, GENESIS_HASH } from './audit-chain.js';
import type { AuditEntry } from '@prisma/client';

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
  /**
   * Entries whose details were erased on request: a version-2 entry still verifies by its digest; a
   * version-1 one (chained before issue 51) only by its place in the chain (`erasedLegacy`).
   */
  erased: number;
  erasedLegacy: number;
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
    erased: 0,
    erasedLegacy: 0,
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
      const problem = entryProblem(row, report);
      if (problem) return fail(id, `entry #${id} ${problem}`);
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

/**
 * What is wrong with one entry's own content, or null. Version 2: the details match their digest
 * (unless erased) and the hash covers the digest. Version 1: the hash covers the details whole; an
 * erased one keeps its hash, which the next entry's prev_hash still names (its content is no longer
 * recomputable: decision 053).
 */
function entryProblem(row: AuditEntry, report: ChainReport): string | null {
  const erased = row.detailsErasedAt !== null;
  if (erased) report.erased += 1;
  if (row.hashVersion >= 2) {
    if (!row.detailsDigest) return 'carries no digest of its details: written outside rentbridge';
    if (!erased && detailsDigest(row.details) !== row.detailsDigest)
      return 'was changed after it was written';
    const computed = entryHashV2(row.prevHash!, { ...row, detailsDigest: row.detailsDigest });
    return computed === row.hash ? null : 'was changed after it was written';
  }
  if (erased) {
    report.erasedLegacy += 1;
    return null;
  }
  const computed = entryHash(row.prevHash!, row);
  return computed === row.hash ? null : 'was changed after it was written';
}
