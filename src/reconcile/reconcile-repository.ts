import { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';
import {
  countVerdicts,
  type ReconcileCommand,
  type ReconcileItem,
  type ReconcileScope,
} from './reconcile-types.js';

/**
 * Reconciliation's rows (tables `reconciliation_runs` and `reconciliation_items`) and its reads of
 * the guard's rows (`commands`, read only: a settled command changes through the guard's own
 * repository). Plain objects out.
 */

/**
 * The command types a pass reconciles (those whose effect the guard's read-back can see on a list),
 * in the order a pass takes them: enrollments after payments, so the enrollments list walked for
 * the payments answers for the enrollments as far as it was read.
 */
export const RECONCILED_TYPES = [
  'rental_payment',
  'application_decision',
  'customer_registration',
  'enrollment',
] as const;
export type ReconciledType = (typeof RECONCILED_TYPES)[number];

/** Guard states a pass looks at: landed, refused or given up (explain nothing), parked. */
const FINAL_IN_WINDOW = ['applied', 'already_applied', 'rejected', 'exhausted', 'unverified'];

interface CommandRow {
  source: string;
  command_type: string;
  command_id: string;
  target_id: string;
  state: string;
  payload: unknown;
  snapshot: unknown;
  finished_at: Date | null;
  updated_at: Date;
  in_scope: boolean;
}

export interface RunRecord {
  id: number;
  startedAt: Date;
  finishedAt: Date | null;
  trigger: string;
  since: Date;
  until: Date;
  source: string | null;
  commandType: string | null;
  state: string;
  error: string | null;
  requests: number;
  pages: number;
  counts: Record<string, number>;
}

export interface StoredItem extends ReconcileItem {
  id: number;
  runId: number;
}

function toItem(r: Prisma.ReconciliationItemGetPayload<object>): StoredItem {
  return {
    id: Number(r.id),
    runId: Number(r.runId),
    verdict: r.verdict as ReconcileItem['verdict'],
    commandType: r.commandType,
    source: r.source,
    commandId: r.commandId,
    targetId: r.targetId,
    commandState: r.commandState,
    reason: r.reason,
    evidence: (r.evidence ?? {}) as Record<string, unknown>,
  };
}

function toRun(r: Prisma.ReconciliationRunGetPayload<object>): RunRecord {
  return {
    id: Number(r.id),
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    trigger: r.trigger,
    since: r.since,
    until: r.until,
    source: r.source,
    commandType: r.commandType,
    state: r.state,
    error: r.error,
    requests: r.requests,
    pages: r.pages,
    counts: (r.counts ?? {}) as Record<string, number>,
  };
}

export function createReconcileRepository(db: Db) {
  return {
    /**
     * The commands of a pass: those finished in the window and every `unverified` one (in scope),
     * with every other command rentbridge holds for the same targets (they explain records too).
     */
    async commands(scope: ReconcileScope, type: ReconciledType): Promise<ReconcileCommand[]> {
      const source = scope.source ?? null;
      // One condition says "in scope"; the targets are those of the commands in scope, and every
      // command of those targets is read (a hash semi-join, no join on the identity: issue 45's bench).
      const inScope = Prisma.sql`(command_type = ${type}
        AND (${source}::text IS NULL OR source = ${source})
        AND (state = 'unverified'
             OR (state = ANY(${FINAL_IN_WINDOW}) AND finished_at >= ${scope.since} AND finished_at < ${scope.until})))`;
      const rows = await db.$queryRaw<CommandRow[]>`
        SELECT source, command_type, command_id, target_id, state, payload, snapshot, finished_at, updated_at,
               ${inScope} AS in_scope
          FROM commands
         WHERE command_type = ${type}
           AND target_id IN (SELECT target_id FROM commands WHERE ${inScope})`;
      return rows.map((r) => ({
        source: r.source,
        commandType: r.command_type,
        commandId: r.command_id,
        targetId: r.target_id,
        state: r.state,
        payload: (r.payload ?? {}) as Record<string, unknown>,
        snapshot: (r.snapshot ?? null) as Record<string, unknown> | null,
        finishedAt: r.finished_at,
        updatedAt: r.updated_at,
        inScope: r.in_scope,
      }));
    },

    async startRun(trigger: string, scope: ReconcileScope): Promise<number> {
      const run = await db.reconciliationRun.create({
        data: {
          trigger,
          since: scope.since,
          until: scope.until,
          source: scope.source ?? null,
          commandType: scope.commandType ?? null,
        },
      });
      return Number(run.id);
    },

    async finishRun(
      id: number,
      result: { items: ReconcileItem[]; requests: number; pages: number; error?: string },
    ): Promise<RunRecord> {
      const runId = BigInt(id);
      await db.reconciliationItem.createMany({
        data: result.items.map((i) => ({
          runId,
          verdict: i.verdict,
          commandType: i.commandType,
          source: i.source,
          commandId: i.commandId,
          targetId: i.targetId,
          commandState: i.commandState,
          reason: i.reason.slice(0, 2000),
          evidence: JSON.parse(JSON.stringify(i.evidence)) as Prisma.InputJsonValue,
        })),
      });
      const run = await db.reconciliationRun.update({
        where: { id: runId },
        data: {
          finishedAt: new Date(),
          state: result.error ? 'failed' : 'finished',
          error: result.error ?? null,
          requests: result.requests,
          pages: result.pages,
          counts: countVerdicts(result.items),
        },
      });
      return toRun(run);
    },

    async runs(limit = 50): Promise<RunRecord[]> {
      const rows = await db.reconciliationRun.findMany({ orderBy: { id: 'desc' }, take: limit });
      return rows.map(toRun);
    },

    async run(id: number): Promise<RunRecord | null> {
      const row = await db.reconciliationRun.findUnique({ where: { id: BigInt(id) } });
      return row ? toRun(row) : null;
    },

    /** The run's items, drift first. */
    async items(runId: number, options: { verdict?: string; limit?: number } = {}): Promise<StoredItem[]> {
      const rows = await db.reconciliationItem.findMany({
        where: { runId: BigInt(runId), ...(options.verdict ? { verdict: options.verdict } : {}) },
        orderBy: { id: 'asc' },
        take: options.limit ?? 10_000,
      });
      return rows.map(toItem);
    },

    /** One item by its id (what a reveal shows). */
    async item(id: number): Promise<StoredItem | null> {
      const row = await db.reconciliationItem.findUnique({ where: { id: BigInt(id) } });
      return row ? toItem(row) : null;
    },

    /** Drift of a run by command type and source: { type, source, verdict, count }. */
    async driftBy(
      runId: number,
    ): Promise<Array<{ commandType: string; source: string | null; verdict: string; count: number }>> {
      const rows = await db.$queryRaw<
        Array<{ command_type: string; source: string | null; verdict: string; n: bigint }>
      >`
        SELECT command_type, source, verdict, count(*) AS n FROM reconciliation_items
         WHERE run_id = ${BigInt(runId)} AND verdict NOT IN ('confirmed', 'settled_applied')
         GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`;
      return rows.map((r) => ({
        commandType: r.command_type,
        source: r.source,
        verdict: r.verdict,
        count: Number(r.n),
      }));
    },

    /** The open dead letter of a command, if the indexer holds one (the newest). */
    async openDeadLetter(identity: {
      source: string;
      commandType: string;
      commandId: string;
    }): Promise<number | null> {
      const row = await db.deadLetter.findFirst({
        where: {
          commandId: identity.commandId,
          commandSource: identity.source,
          commandType: identity.commandType,
          state: 'open',
        },
        orderBy: { id: 'desc' },
        select: { id: true },
      });
      return row ? Number(row.id) : null;
    },
  };
}

export type ReconcileRepository = ReturnType<typeof createReconcileRepository>;
