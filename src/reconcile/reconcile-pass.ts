import type { Logger } from '../logger.js';
import type { PartnerClient } from '../partner/index.js';
import type { SourcePartners } from '../partner/source-partners.js';
import { judgeApplication } from './decision-evidence.js';
import { judgeCustomer, judgeCustomerEnrollment } from './onboarding-evidence.js';
import { judgeEnrollment } from './payment-evidence.js';
import {
  createPlatformReader,
  readApplications,
  readCustomersByEmail,
  readEnrollments,
  readEnrollmentsOfCustomers,
  type PlatformReader,
  type ReadCost,
} from './platform-reader.js';
import {
  RECONCILED_TYPES,
  type ReconciledType,
  type ReconcileRepository,
  type RunRecord,
} from './reconcile-repository.js';
import type { Settler } from './reconcile-settle.js';
import type { ReconcileCommand, ReconcileItem, ReconcileScope, VerdictClock } from './reconcile-types.js';

/**
 * One reconciliation pass (issue 45, docs/reconciliation.md): the commands of the window and every
 * parked one, their targets read from the Partner API (poll lane, each list walked once per key and
 * only as far as the records it needs), a verdict per item by the guard's read-back rules, parked
 * commands settled, and the run stored with its items.
 */

export interface PassDeps {
  reconcile: ReconcileRepository;
  /** The client acting for each source (decision 026): a scoped source is read with its own key. */
  sources: SourcePartners<PartnerClient>;
  settler: Settler;
  logger: Logger;
  /** The Partner API's longest processing time of a write (PARTNER_MAX_PROCESSING_MS). */
  maxProcessingMs: number;
  /** Called with each finished run (metrics, the report event). */
  onRun?(run: RunRecord, items: ReconcileItem[]): Promise<void>;
}

export interface PassResult {
  run: RunRecord;
  items: ReconcileItem[];
}

/** Targets grouped by the key that reads them: the key of the first source in scope that targets each. */
function byKey(sources: PassDeps['sources'], commands: ReconcileCommand[]) {
  const groups = new Map<
    string,
    { keyId: string; partner: PartnerClient; targets: Map<string, ReconcileCommand[]> }
  >();
  const keyOfTarget = new Map<string, string>();
  for (const c of commands.filter((x) => x.inScope)) {
    if (keyOfTarget.has(c.targetId)) continue;
    const acting = sources.forSource(c.source);
    keyOfTarget.set(c.targetId, acting.keyId);
    if (!groups.has(acting.keyId))
      groups.set(acting.keyId, { keyId: acting.keyId, partner: acting.partner, targets: new Map() });
  }
  for (const c of commands) {
    const key = keyOfTarget.get(c.targetId);
    if (key === undefined) continue;
    const targets = groups.get(key)!.targets;
    targets.set(c.targetId, [...(targets.get(c.targetId) ?? []), c]);
  }
  return groups;
}

function firstDay(commands: ReconcileCommand[]): string {
  const times = commands.map((c) =>
    Date.parse(String(c.snapshot?.taken_at ?? (c.finishedAt ?? c.updatedAt).toISOString())),
  );
  return new Date(Math.min(...times)).toISOString().slice(0, 10);
}

/** The readers of a pass, one per key: each list walked at most once per key and pass. */
type Readers = (keyId: string, partner: PartnerClient) => PlatformReader;

/** One key's targets of one type: read what they need, judge each. */
async function judgeTargets(
  type: ReconciledType,
  reader: PlatformReader,
  targets: Map<string, ReconcileCommand[]>,
  clock: VerdictClock,
): Promise<ReconcileItem[]> {
  const ids = [...targets.keys()];
  const judged: ReconcileItem[] = [];
  switch (type) {
    case 'rental_payment': {
      const found = await readEnrollments(reader, ids);
      for (const [id, cmds] of targets)
        judged.push(...judgeEnrollment(id, found.get(id) ?? null, cmds, clock));
      break;
    }
    case 'application_decision': {
      const found = await readApplications(reader, ids, firstDay([...targets.values()].flat()));
      for (const [id, cmds] of targets) judged.push(...judgeApplication(found.get(id) ?? null, cmds, clock));
      break;
    }
    case 'customer_registration':
    case 'enrollment': {
      const read = type === 'enrollment' ? readEnrollmentsOfCustomers : readCustomersByEmail;
      const judge = type === 'enrollment' ? judgeCustomerEnrollment : judgeCustomer;
      const { records, unkeyed } = await read(reader, ids);
      for (const [id, cmds] of targets)
        judged.push(...judge(id, { record: records.get(id) ?? null, unkeyed }, cmds, clock));
      break;
    }
  }
  return judged;
}

async function judgeType(
  deps: PassDeps,
  type: ReconciledType,
  commands: ReconcileCommand[],
  clock: VerdictClock,
  readers: Readers,
): Promise<ReconcileItem[]> {
  const items: ReconcileItem[] = [];
  for (const { keyId, partner, targets } of byKey(deps.sources, commands).values()) {
    const judged = await judgeTargets(type, readers(keyId, partner), targets, clock);
    // Which key read the evidence (decision 026): `deployment`, or a digest naming a source's own key.
    for (const item of judged) items.push({ ...item, evidence: { ...item.evidence, read_with: keyId } });
  }
  return items;
}

async function settle(deps: PassDeps, runId: number, items: ReconcileItem[]): Promise<void> {
  for (const item of items) {
    if (item.verdict !== 'settled_applied' && item.verdict !== 'settled_absent') continue;
    try {
      const done =
        item.verdict === 'settled_applied'
          ? await deps.settler.settleApplied(item, runId)
          : await deps.settler.settleAbsent(item, runId);
      item.evidence = { ...item.evidence, settlement: done };
    } catch (error) {
      // The verdict stands; the settlement is tried again by the next pass (the row is still parked).
      deps.logger.warn({ err: error, commandId: item.commandId, runId }, 'settling a command failed');
      item.evidence = { ...item.evidence, settlement: `failed: ${(error as Error).message}` };
    }
  }
}

export function createReconcilePass(deps: PassDeps) {
  return {
    async run(scope: ReconcileScope, trigger: string, runId?: number): Promise<PassResult> {
      const id = runId ?? (await deps.reconcile.startRun(trigger, scope));
      const log = deps.logger.child({ component: 'reconcile', runId: id });
      const cost: ReadCost = { requests: 0, pages: new Set() };
      const open = new Map<string, PlatformReader>();
      const readers: Readers = (keyId, partner) => {
        let reader = open.get(keyId);
        if (!reader) open.set(keyId, (reader = createPlatformReader(partner, keyId, cost)));
        return reader;
      };
      const items: ReconcileItem[] = [];
      try {
        const clock = { now: Date.now(), maxProcessingMs: deps.maxProcessingMs };
        const types = RECONCILED_TYPES.filter((t) => !scope.commandType || t === scope.commandType);
        try {
          for (const type of types) {
            const commands = await deps.reconcile.commands(scope, type);
            log.info(
              { commandType: type, commands: commands.filter((c) => c.inScope).length },
              'reconciling',
            );
            items.push(...(await judgeType(deps, type, commands, clock, readers)));
          }
        } finally {
          for (const reader of open.values()) await reader.close();
        }
        await settle(deps, id, items);
      } catch (error) {
        await deps.reconcile.finishRun(id, {
          items,
          requests: cost.requests,
          pages: cost.pages.size,
          error: String(error),
        });
        throw error;
      }
      const run = await deps.reconcile.finishRun(id, {
        items,
        requests: cost.requests,
        pages: cost.pages.size,
      });
      log.info({ counts: run.counts, requests: run.requests }, 'reconciliation run finished');
      await deps.onRun?.(run, items);
      return { run, items };
    },
  };
}

export type ReconcilePass = ReturnType<typeof createReconcilePass>;
