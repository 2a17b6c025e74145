import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import type { CommandIdentity } from '../events/command-identity.js';

/**
 * What ops read of the guard's `commands` / `command_attempts` tables (the guard writes them), and
 * the one write a redrive makes there: putting a final, not-applied row back into a state the
 * guard retries from (docs/decisions/008-redrive-resets-the-guard-row.md).
 */

type Tx = Prisma.TransactionClient;

/** Guard states in which the command reached the Partner API: a redrive must not send it again. */
export const APPLIED_STATES = ['applied', 'already_applied'] as const;
/** Final guard states that did not apply the command: a redrive resets them so the consumer retries. */
export const RESETTABLE_STATES = ['rejected', 'unverified', 'exhausted'] as const;

export interface CommandAttemptView {
  attempt: number;
  requestId: string;
  kind: string;
  startedAt: Date;
  finishedAt: Date | null;
  result: string | null;
  status: number | null;
  code: string | null;
  message: string | null;
}

/** The guard row of a command as ops see it (the guard's own state type is src/guard's GuardState). */
export interface GuardStateView {
  source: string;
  commandId: string;
  commandType: string;
  targetId: string;
  state: string;
  attempts: number;
  requestIdBase: string;
  requestIds: string[];
  lastError: unknown;
  /** Whether the guard kept a snapshot of the target record (taken before its last write). */
  hasSnapshot: boolean;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  history: CommandAttemptView[];
}

function key(id: CommandIdentity) {
  return {
    source_commandType_commandId: { source: id.source, commandType: id.commandType, commandId: id.commandId },
  };
}

export async function getGuardState(db: Db | Tx, identity: CommandIdentity): Promise<GuardStateView | null> {
  const row = await db.command.findUnique({
    where: key(identity),
    include: { attemptLog: { orderBy: { id: 'asc' } } },
  });
  if (!row) return null;
  return {
    source: row.source,
    commandId: row.commandId,
    commandType: row.commandType,
    targetId: row.targetId,
    state: row.state,
    attempts: row.attempts,
    requestIdBase: row.requestIdBase,
    requestIds: row.requestIds,
    lastError: row.lastError,
    hasSnapshot: row.snapshot != null,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    finishedAt: row.finishedAt,
    history: row.attemptLog.map((a) => ({
      attempt: a.attempt,
      requestId: a.requestId,
      kind: a.kind,
      startedAt: a.startedAt,
      finishedAt: a.finishedAt,
      result: a.result,
      status: a.status,
      code: a.code,
      message: a.message,
    })),
  };
}

/**
 * The state a redrive puts a final, not-applied guard row back into, so that the consumer tries
 * again through the guard's own rules (docs/decisions/008-redrive-resets-the-guard-row.md):
 * - `rejected`, `exhausted`: the write is known not to have landed → `pending` (write again);
 * - `unverified`: it may have landed → `in_flight`, which makes the guard read back first (against
 *   the snapshot it kept) and write only if the record is unchanged; never a write on a guess.
 */
export function resetStateFor(state: string, hasSnapshot: boolean): 'pending' | 'in_flight' {
  return state === 'unverified' && hasSnapshot ? 'in_flight' : 'pending';
}

/**
 * Moves a final, not-applied row back to `pending`/`in_flight` only while it is still in the
 * state the caller saw; returns the new state, or null when the row changed meanwhile. The row's
 * attempts and request ids stay, so the history in `command_attempts` is kept and new attempts
 * get new request ids.
 */
export async function resetGuardRow(
  tx: Tx,
  identity: CommandIdentity,
  expectedState: string,
  /** A corrected command: the row's content becomes it, so the guard takes it for this command. */
  corrected?: { payload: Prisma.InputJsonValue; targetId: string },
): Promise<string | null> {
  const row = await tx.command.findUnique({ where: key(identity), select: { state: true, snapshot: true } });
  if (!row || row.state !== expectedState) return null;
  const next = resetStateFor(row.state, row.snapshot != null);
  const { count } = await tx.command.updateMany({
    where: { ...identity, state: expectedState },
    data: { state: next, finishedAt: null, ...corrected },
  });
  return count === 1 ? next : null;
}
