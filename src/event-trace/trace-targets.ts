import { escapeId } from '../contracts/command-contracts.js';
import type { AuditRow, CommandRow } from './trace-rows.js';

/**
 * The targets a command had, in order (issue 41). A redrive with a correction may change a
 * command's target (application 999999999 → 696); the guard row then holds only the new one, and
 * the redrive's audit entry keeps the row as it was (`details.guardRowReset`, decision 008). Each
 * attempt is shown under the target it really had: the one in force when it started.
 */
export interface TargetChange {
  at: Date;
  from: string;
  to: string;
  actor: string;
  /** The audit entry's target: `dead_letter:<id>`. */
  letter: string;
}

export interface CommandTargets {
  /** The target the guard took the command for. */
  first: string;
  changes: TargetChange[];
  /** The target in force at `at`. */
  at(at: Date): string;
}

/** A redrive of this command that reset its guard row from another target. */
function correctedFrom(c: CommandRow, a: AuditRow): string | null {
  if (a.action !== 'redrive') return null;
  const d = a.details;
  if (d.commandId !== c.commandId || d.corrected !== true) return null;
  if (typeof d.commandType === 'string' && d.commandType !== c.commandType) return null;
  if (typeof d.commandSource === 'string' && d.commandSource !== c.source) return null;
  const reset = d.guardRowReset as { targetId?: unknown } | undefined;
  return typeof reset?.targetId === 'string' ? reset.targetId : null;
}

export function commandTargets(c: CommandRow, audit: AuditRow[]): CommandTargets {
  const redrives = audit
    .map((a) => ({ a, from: correctedFrom(c, a) }))
    .filter((r): r is { a: AuditRow; from: string } => r.from !== null)
    .sort((x, y) => x.a.at.getTime() - y.a.at.getTime());
  const changes: TargetChange[] = [];
  redrives.forEach(({ a, from }, i) => {
    // The target the redrive set: the next redrive's "before", or the row's own for the last.
    const to = redrives[i + 1]?.from ?? c.targetId;
    if (to !== from) changes.push({ at: a.at, from, to, actor: a.actor, letter: a.target });
  });
  const first = changes[0]?.from ?? c.targetId;
  return {
    first,
    changes,
    at(at) {
      let target = first;
      for (const change of changes) if (change.at.getTime() <= at.getTime()) target = change.to;
      return target;
    },
  };
}

/** ` [target 696]`: said of each step of a command whose target was corrected (else nothing). */
export function targetSuffix(targets: CommandTargets, at: Date): string {
  return targets.changes.length > 0 ? ` [target ${escapeId(targets.at(at))}]` : '';
}
