import type { Prisma } from '@prisma/client';
import { appendAudit } from '../audit/audit-chain.js';
import type { Db } from '../db/prisma.js';
import type { TopicSettings } from '../kafka/topic-settings.js';
import { notifyRelay } from '../outbox/relay-waker.js';
import {
  eraseAttempts,
  eraseAuditDetails,
  eraseCallbacks,
  eraseCommands,
  eraseDeadLetters,
  eraseReconciliation,
} from './erase-commands.js';
import { eraseOutbox, eraseSnapshots, eraseUnrouted, eraseVersions, noteErased } from './erase-records.js';
import { findFootprint } from './erasure-find.js';
import { topicLines, type ErasureReceipt } from './erasure-receipt.js';

export interface EraseRequest {
  email: string;
  dryRun: boolean;
  /** Why (a ticket number): kept in the audit entry's details, which an erasure can empty too. */
  note?: string;
  actor: string;
}

/** Thrown to roll a dry run back after it counted everything. */
class DryRun extends Error {
  constructor(readonly receipt: ErasureReceipt) {
    super('dry run');
  }
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** A clear error for a value that cannot be an e-mail (nothing is looked up). */
export function checkEmail(email: unknown): string | null {
  if (typeof email !== 'string' || email.trim() === '') return 'email: required';
  if (email.length > 320 || !EMAIL.test(email.trim())) return 'email: not an e-mail address';
  return null;
}

/**
 * Erases one person (docs/privacy.md, decision 053): everything found from the e-mail, in one
 * transaction; a dry run does the same work and rolls it back, so its receipt is the same. Audited
 * as `erase` with the e-mail's digest, dry runs too (looking a person up by e-mail is a search by a
 * personal value). The relay is woken for the tombstones after the commit.
 */
export async function erasePerson(
  db: Db,
  topics: TopicSettings,
  request: EraseRequest,
): Promise<ErasureReceipt> {
  let receipt: ErasureReceipt;
  try {
    receipt = await db.$transaction(
      async (tx) => {
        const r = await eraseIn(tx, topics, request);
        if (request.dryRun) throw new DryRun(r);
        await appendAudit(tx, auditEntry(request, r));
        return r;
      },
      { timeout: 120_000, maxWait: 30_000 },
    );
  } catch (err) {
    if (!(err instanceof DryRun)) throw err;
    receipt = err.receipt;
    await appendAudit(db, auditEntry(request, receipt));
  }
  if (!request.dryRun) await notifyRelay(db).catch(() => undefined);
  return receipt;
}

function auditEntry(request: EraseRequest, r: ErasureReceipt) {
  return {
    actor: request.actor,
    action: 'erase',
    target: `email_digest:${r.email_digest}`,
    details: {
      email_digest: r.email_digest,
      dry_run: r.dry_run,
      tables: r.tables,
      pending: r.pending.length,
      ...(request.note ? { note: request.note } : {}),
    },
  };
}

async function eraseIn(tx: Prisma.TransactionClient, topics: TopicSettings, request: EraseRequest) {
  const at = new Date();
  const fp = await findFootprint(tx, request.email);
  const commands = await eraseCommands(tx, fp);
  const attempts = await eraseAttempts(tx, fp);
  const letters = await eraseDeadLetters(tx, fp);
  const callbacks = await eraseCallbacks(tx, fp);
  const reconciled = await eraseReconciliation(tx, fp);
  const audit = await eraseAuditDetails(tx, fp, [...letters.targets, ...callbacks.targets]);
  const outbox = await eraseOutbox(tx, fp);
  const unrouted = await eraseUnrouted(tx, fp);
  const snapshots = await eraseSnapshots(tx, fp);
  const versions = await eraseVersions(tx, fp);
  const tombstones = await noteErased(tx, fp);
  const receipt: ErasureReceipt = {
    email_digest: fp.digest,
    dry_run: request.dryRun,
    at: at.toISOString(),
    customers: fp.customerIds.length,
    enrollments: fp.enrollmentIds.length,
    applications: fp.applicationIds.length,
    tables: {
      commands,
      command_attempts: attempts,
      dead_letters: letters.rows,
      callback_deliveries: callbacks.deliveries,
      callback_attempts: callbacks.attempts,
      reconciliation_items: reconciled,
      audit_log: audit,
      outbox: outbox.deleted + unrouted.deleted + unrouted.scrubbed,
      snapshot_reads: snapshots,
      published_versions: versions.versions,
      known_records: versions.known,
    },
    topics: topicLines(at, topics, {
      commands: fp.commands,
      deadLetterTopics: letters.topics,
      tombstones,
      reconciled,
      unrouted: unrouted.found,
    }),
    pending: fp.commands
      .filter((c) => !c.final)
      .map((c) => ({
        source: c.source,
        command_type: c.commandType,
        command_id: c.commandId,
        state: c.state,
      })),
    pending_rows: { outbox: outbox.pending, callback_deliveries: callbacks.pending },
  };
  return receipt;
}
