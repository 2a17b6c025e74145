import type { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import type { CommandIdentity } from '../contracts/command-contracts.js';
import { resetCommandRow } from '../guard/store/command-repository.js';
import { redriveReset } from '../guard/machine/guard-machine.js';

/**
 * What ops read of the guard's `commands` / `command_attempts` tables. The guard writes them, the
 * redrive's reset included (docs/decisions/008-redrive-resets-the-guard-row.md): this file only
 * hands that reset on to the guard's repository.
 */

type Tx = Prisma.TransactionClient;

/** The guard's own: its state machine decides what a redrive resets (src/guard/machine/guard-machine.ts). */
export { APPLIED_STATES, RESETTABLE_STATES } from '../guard/machine/guard-machine.js';

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

/** The state a redrive puts a final, not-applied row back into (the guard machine's `redriveReset`). */
export function resetStateFor(state: string, hasSnapshot: boolean): 'pending' | 'in_flight' {
  return redriveReset(state, hasSnapshot) ?? 'pending';
}

/**
 * The redrive's reset, made by the one writer of the `commands` table (src/guard's
 * `resetCommandRow`): a final, not-applied row back to `pending`/`in_flight` while it is still in
 * the state the caller saw; the new state, or null when the row changed meanwhile.
 */
export const resetGuardRow = (
  tx: Tx,
  identity: CommandIdentity,
  expectedState: string,
  corrected?: { payload: Prisma.InputJsonValue; targetId: string },
): Promise<string | null> => resetCommandRow(tx, identity, expectedState, corrected);
