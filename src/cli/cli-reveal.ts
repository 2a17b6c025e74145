import type { Db } from '../db/prisma.js';
import { writeAudit } from '../dead-letters/audit-repository.js';
import { isPersonalSearch, revealTarget, type RevealKind } from '../personal-data.js';
import { cliActor } from './cli-actor.js';
import { UsageError } from './process.js';

/**
 * The CLI's side of decision 052: whoever runs it holds the database, so it is an admin that sees
 * masked values until `--reveal REASON` shows one item whole, audited as the API's reveal is
 * (actor `cli:<user>@<host>`, the item and the reason, never a value). A search by a personal
 * value (an e-mail, a phone) is a reveal: refused without `--reveal`.
 */

/** The reason given with --reveal, checked; undefined: nothing revealed. */
export function revealReason(given: string | undefined): string | undefined {
  if (given === undefined) return undefined;
  const reason = given.trim();
  if (reason.length < 3)
    throw new UsageError('--reveal needs a reason (at least 3 characters), kept in the audit');
  return reason;
}

/** A search text that is a personal value needs --reveal (exit 2 naming it otherwise). */
export function requireRevealForSearch(
  values: Array<string | undefined>,
  reason: string | undefined,
): string | null {
  const personal = values.find((v) => isPersonalSearch(v));
  if (personal === undefined) return null;
  if (reason === undefined)
    throw new UsageError(
      'a search by a personal value (an e-mail, a phone) is a reveal: add --reveal REASON',
    );
  return personal;
}

export async function auditCliReveal(
  db: Db,
  kind: RevealKind | 'search',
  id: string | number,
  reason: string,
): Promise<void> {
  await writeAudit(db, {
    actor: cliActor(),
    action: 'reveal',
    target: revealTarget(kind, id),
    reason,
    details: { kind, via: 'cli' },
  });
}
