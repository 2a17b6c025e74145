import type { Db } from '../db/prisma.js';
import { AppError } from '../errors.js';
import { deadLetterTarget, writeAudit } from './audit-repository.js';
import { lockDeadLetter, resolveDeadLetter } from './dead-letter-repository.js';

export interface DiscardOutcome {
  id: number;
  action: 'discarded' | 'skip' | 'not_found';
  message: string;
}

/** Closes an open letter without redriving it; the reason is required and audited. */
export async function discardDeadLetter(
  deps: { db: Db },
  id: number,
  options: { actor: string; reason: string },
): Promise<DiscardOutcome> {
  const reason = options.reason.trim();
  if (!reason) throw new AppError(400, 'invalid_request', 'a reason is required to discard a dead letter');
  return deps.db.$transaction(async (tx) => {
    const letter = await lockDeadLetter(tx, id);
    if (!letter) return { id, action: 'not_found', message: `no dead letter ${id}` };
    if (letter.state !== 'open')
      return { id, action: 'skip', message: `letter is ${letter.state}, not open` };
    await resolveDeadLetter(tx, id, { state: 'discarded', by: options.actor, resolution: reason });
    await writeAudit(tx, {
      actor: options.actor,
      action: 'discard',
      target: deadLetterTarget(id),
      reason,
      details: {
        commandId: letter.commandId,
        commandSource: letter.commandSource,
        commandType: letter.commandType,
        reason: letter.reason,
        errorCode: letter.errorCode,
      },
    });
    return { id, action: 'discarded', message: 'discarded' };
  });
}
