import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';

/**
 * What ops read of the guard's `commands` / `command_attempts` tables (the guard writes them), and
 * the one write a redrive makes there: removing a final, not-applied row so the consumer tries
 * again (docs/decisions/008-redrive-resets-the-guard-row.md).
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

export interface GuardState {
  commandId: string;
  commandType: string;
  targetId: string;
  state: string;
  attempts: number;
  requestIds: string[];
  lastError: unknown;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  history: CommandAttemptView[];
}

export async function getGuardState(db: Db | Tx, commandId: string): Promise<GuardState | null> {
  const row = await db.command.findUnique({
    where: { commandId },
    include: { attemptLog: { orderBy: { id: 'asc' } } },
  });
  if (!row) return null;
  return {
    commandId: row.commandId,
    commandType: row.commandType,
    targetId: row.targetId,
    state: row.state,
    attempts: row.attempts,
    requestIds: row.requestIds,
    lastError: row.lastError,
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
 * Deletes the guard row (its attempts go with it, by cascade) only while it is still in the state
 * the caller saw; returns whether it did. The caller keeps the row in the audit details first.
 */
export async function deleteGuardRow(tx: Tx, commandId: string, expectedState: string): Promise<boolean> {
  const { count } = await tx.command.deleteMany({ where: { commandId, state: expectedState } });
  return count === 1;
}
