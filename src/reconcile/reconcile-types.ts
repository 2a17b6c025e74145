import { RECONCILE_VERDICTS } from '../contracts/reconciliation-report.js';

export { RECONCILE_VERDICTS };

/**
 * The vocabulary of reconciliation (issue 45, docs/reconciliation.md): what a pass looks at, the
 * verdict it gives each item, and what a run reports. Pure: no I/O.
 */

/**
 * - `confirmed`: an applied command's effect is on the platform, once.
 * - `missing`: applied, but not on the platform.
 * - `unexpected`: on the platform, explained by no applied command (reported by someone else, or a
 *   write rentbridge believed not applied).
 * - `ambiguous`: the evidence cannot tell which record is whose (two identical payments on one
 *   enrollment).
 * - `settled_applied`: an `unverified` command whose write the evidence shows landed: now `applied`.
 * - `settled_absent`: an `unverified` command whose write is absent long after the processing
 *   bound: safe to redrive (redriven when RECONCILE_REDRIVE_ABSENT=true).
 * - `unknown`: the evidence the rule needs is missing (the record is not listed, it carries no list
 *   of payments, the bound has not passed): never guessed, as in the guard's read-back.
 */
export type ReconcileVerdict = (typeof RECONCILE_VERDICTS)[number];

/** Verdicts that need nobody: everything else is drift (the CLI exits 1, the alert may fire). */
export const SETTLED_VERDICTS: readonly ReconcileVerdict[] = ['confirmed', 'settled_applied'];

export function isDrift(verdict: ReconcileVerdict): boolean {
  return !SETTLED_VERDICTS.includes(verdict);
}

/** A command as the pass reads it from the guard's rows (only the fields it needs). */
export interface ReconcileCommand {
  source: string;
  commandType: string;
  commandId: string;
  targetId: string;
  state: string;
  payload: Record<string, unknown>;
  snapshot: Record<string, unknown> | null;
  finishedAt: Date | null;
  updatedAt: Date;
  /** Finished in the window, or `unverified` (whatever its age): an item of this pass. */
  inScope: boolean;
}

/** One item of a run. */
export interface ReconcileItem {
  verdict: ReconcileVerdict;
  commandType: string;
  source: string | null;
  commandId: string | null;
  targetId: string;
  commandState: string | null;
  reason: string;
  evidence: Record<string, unknown>;
}

/** What the pass asks: the window, optional filters. */
export interface ReconcileScope {
  since: Date;
  until: Date;
  source?: string | undefined;
  commandType?: string | undefined;
}

/** The clock and the bound the verdicts need (the guard's processing bound, PARTNER_MAX_PROCESSING_MS). */
export interface VerdictClock {
  now: number;
  maxProcessingMs: number;
}

/** `confirmed: 3, missing: 1`: an item count per verdict, every verdict present. */
export function countVerdicts(
  items: readonly Pick<ReconcileItem, 'verdict'>[],
): Record<ReconcileVerdict, number> {
  const counts = Object.fromEntries(RECONCILE_VERDICTS.map((v) => [v, 0])) as Record<
    ReconcileVerdict,
    number
  >;
  for (const item of items) counts[item.verdict]++;
  return counts;
}

/** The moment the command's last write could still land until (its row's last change + the bound). */
export function boundPassed(command: ReconcileCommand, clock: VerdictClock): boolean {
  const last = (command.finishedAt ?? command.updatedAt).getTime();
  return clock.now - last > clock.maxProcessingMs;
}

export function itemOf(
  command: ReconcileCommand,
  verdict: ReconcileVerdict,
  reason: string,
  evidence: Record<string, unknown> = {},
): ReconcileItem {
  return {
    verdict,
    commandType: command.commandType,
    source: command.source,
    commandId: command.commandId,
    targetId: command.targetId,
    commandState: command.state,
    reason,
    evidence,
  };
}
