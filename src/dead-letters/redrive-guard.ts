import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import { UNKNOWN_SOURCE, type CommandIdentity } from '../contracts/command-contracts.js';
import { sameContent } from '../guard/machine/command-record.js';
import { commandOfValue, letterIdentity } from './command-correction.js';
import type { DeadLetter } from './dead-letter-repository.js';
import {
  APPLIED_STATES,
  getGuardState,
  resetGuardRow,
  resetStateFor,
  RESETTABLE_STATES,
  type GuardStateView,
} from './guard-state-repository.js';

/**
 * What a redrive asks of the guard and the one change it makes there. Every call from src/dead-letters
 * to the guard's `commands` rows goes through this module (docs/decisions/008-redrive-resets-the-guard-row.md).
 */

type Tx = Prisma.TransactionClient;

export interface FoundGuard {
  /** The identity the row was found under (the letter's, or the same command of unknown source). */
  identity: CommandIdentity;
  guard: GuardStateView;
}

/**
 * The guard row of an identity; else the row of unknown source (written before identities, its
 * source lost) with the same type and id AND the same content as `command`: that is the same
 * command, recorded before its source was kept. A row of unknown source with other content is
 * another command that shares the id (another source's, most likely): never closed, reset or
 * shown as this one's (the guard's adoption follows the same rule, command-row-inserts.ts).
 */
export async function findGuardState(
  db: Db | Tx,
  identity: CommandIdentity,
  /** The letter's command (its CloudEvent `data`); without it no row of unknown source is taken. */
  command: unknown,
): Promise<FoundGuard | null> {
  const guard = await getGuardState(db, identity);
  if (guard) return { identity, guard };
  if (command == null || identity.source === UNKNOWN_SOURCE) return null;
  const legacy = { ...identity, source: UNKNOWN_SOURCE };
  const row = await db.command.findUnique({
    where: { source_commandType_commandId: legacy },
    select: { payload: true },
  });
  if (!row || !sameContent(row.payload, command)) return null;
  const old = await getGuardState(db, legacy);
  return old ? { identity: legacy, guard: old } : null;
}

/** The command a dead letter holds (its CloudEvent `data`, as its type's schema reads it). */
export function letterCommand(letter: DeadLetter, topicPrefix: string): unknown {
  return commandOfValue(letter.value, letter.originalTopic, topicPrefix)?.data ?? null;
}

/** The guard row of the command `letter` holds, found under `identity` (the letter's). */
export function findLetterGuard(
  db: Db | Tx,
  identity: CommandIdentity,
  letter: DeadLetter,
  topicPrefix: string,
): Promise<FoundGuard | null> {
  return findGuardState(db, identity, letterCommand(letter, topicPrefix));
}

/** The guard row of the command a dead letter holds (for `dlq show` and the console). */
export async function letterGuardState(
  db: Db,
  letter: DeadLetter,
  topicPrefix: string,
): Promise<GuardStateView | null> {
  const identity = letterIdentity(letter, topicPrefix);
  return identity ? ((await findLetterGuard(db, identity, letter, topicPrefix))?.guard ?? null) : null;
}

/** The command reached the Partner API: a redrive must not send it again. */
export function isApplied(guard: GuardStateView): boolean {
  return (APPLIED_STATES as readonly string[]).includes(guard.state);
}

/**
 * Where a redrive puts the guard row back so the consumer tries again: `pending` or `in_flight`;
 * null when the row is not in a final, not-applied state (or there is none).
 */
export function redriveResetTo(guard: GuardStateView | null): 'pending' | 'in_flight' | null {
  if (!guard || !(RESETTABLE_STATES as readonly string[]).includes(guard.state)) return null;
  return resetStateFor(guard.state, guard.hasSnapshot);
}

/**
 * The one write a redrive makes to the guard's `commands` table: a final, not-applied row put back
 * so the consumer tries again, with the corrected command's content when there is one. False when
 * the consumer moved the row meanwhile.
 */
export async function reopenGuardRow(
  tx: Tx,
  found: FoundGuard,
  corrected: { data: unknown; targetId: string } | null,
): Promise<boolean> {
  const reset = await resetGuardRow(
    tx,
    found.identity,
    found.guard.state,
    corrected ? { payload: corrected.data as never, targetId: corrected.targetId } : undefined,
  );
  return reset != null;
}
