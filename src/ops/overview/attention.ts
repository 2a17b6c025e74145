import type { Db } from '../../db/prisma.js';
import type { OverviewRows } from './overview-repository.js';
import type { Stage } from './overview-model.js';
import { fmtAge } from './overview-model.js';
import { ROLE_GONE_SECONDS } from '../role-heartbeat.js';
import { SOURCE_WAIT_BOUND_SECONDS } from '../../partner/rate-budget-types.js';

/**
 * What needs a person now (decision 057): the overview's first list, above the flow. Each item says
 * what, how many, and links to the console's page where one acts on it. An empty list is the
 * answer "nothing is wrong"; the tab's title carries the list's length.
 *
 * Built from the stages already judged (one rule per state: src/ops/overview/stage-rules.ts) and
 * two small reads of their own: the latest reconciliation run's drift and the callback endpoints
 * whose breaker is open or that a 410 disabled. A source's commands waiting come from the overview's
 * own rows (the Partner API stage's).
 */

export interface AttentionItem {
  /** What kind of trouble; one item per kind and subject (a dead-letter reason, a stage, a source). */
  kind:
    | 'dead-letters'
    | 'not-running'
    | 'crash-loop'
    | 'stalled'
    | 'throttled'
    | 'drift'
    | 'circuit'
    | 'source-wait';
  /** `danger`: the flow is stopped there; `warning`: it moves, but someone must look. */
  severity: 'danger' | 'warning';
  title: string;
  count: number;
  /** One line: why, and the bound it passed. */
  detail: string;
  /** Where to act: a console address (`#letters/reason=rejected`, `#reconciliation/3`). */
  href: string;
  /** The link's words ("open the letters"). */
  action: string;
}

export interface AttentionRows {
  /** The latest finished reconciliation run with drift, when the latest finished run has any. */
  drift: { runId: number; count: number; finishedAt: Date } | null;
  /** Callback endpoints paused by their breaker or disabled by a 410. */
  circuits: Array<{ source: string; state: 'open' | 'disabled'; failures: number }>;
  /**
   * Roles whose processes went away without stopping (their last report is over ROLE_GONE_SECONDS
   * old: a clean stop deletes it) at least twice in the last 10 minutes: crashing and restarting.
   */
  crashLoops: Array<{ role: string; gone: number }>;
}

/** How many statements readAttentionRows sends (the overview reports its cost). */
export const ATTENTION_QUERY_COUNT = 3;

const SETTLED = ['confirmed', 'settled_applied'];

export async function readAttentionRows(db: Db): Promise<AttentionRows> {
  const [runs, endpoints, crashed] = await Promise.all([
    db.$queryRaw<Array<{ id: bigint; counts: Record<string, number> | null; finished_at: Date }>>`
      SELECT id, counts, finished_at FROM reconciliation_runs
       WHERE state = 'finished' ORDER BY id DESC LIMIT 1`,
    db.$queryRaw<Array<{ source: string; breaker: string; disabled_url: string | null; failures: number }>>`
      SELECT source, breaker, disabled_url, consecutive_failures AS failures FROM callback_endpoints
       WHERE breaker = 'open' OR disabled_url IS NOT NULL ORDER BY source`,
    db.$queryRaw<Array<{ role: string; gone: bigint }>>`
      SELECT role, count(DISTINCT instance) AS gone FROM role_heartbeats
       WHERE seen_at > now() - interval '10 minutes'
         AND seen_at < now() - make_interval(secs => ${ROLE_GONE_SECONDS})
       GROUP BY role HAVING count(DISTINCT instance) >= 2 ORDER BY role`,
  ]);
  const run = runs[0];
  const drift = run
    ? Object.entries(run.counts ?? {})
        .filter(([verdict]) => !SETTLED.includes(verdict))
        .reduce((n, [, v]) => n + Number(v), 0)
    : 0;
  return {
    drift: run && drift > 0 ? { runId: Number(run.id), count: drift, finishedAt: run.finished_at } : null,
    circuits: endpoints.map((e) => ({
      source: e.source,
      state: e.disabled_url ? 'disabled' : 'open',
      failures: Number(e.failures),
    })),
    crashLoops: crashed.map((c) => ({ role: c.role, gone: Number(c.gone) })),
  };
}

const stageHref = (id: Stage['id']) => `#overview/${id}`;

/**
 * A PMS source whose oldest command has waited for a Partner API slot longer than one window
 * (SOURCE_WAIT_BOUND_SECONDS, the bound of the alert RentbridgeSourceCommandsWaiting): its share is
 * too small for its load, or the budget for all. From the rows the Partner API stage already reads
 * (its waiters by source, issue 52), so no statement of its own; one item per source, summed over
 * the budgets, linking to that stage's card where each source's share and waiters are shown.
 */
export function sourceWaitItems(rows: Pick<OverviewRows, 'budgetSources'>): AttentionItem[] {
  const by = new Map<string, { waiting: number; oldest: number }>();
  for (const l of rows.budgetSources) {
    if (l.source === null || l.waiting === 0 || l.oldestSeconds === null) continue;
    const had = by.get(l.source) ?? { waiting: 0, oldest: 0 };
    by.set(l.source, { waiting: had.waiting + l.waiting, oldest: Math.max(had.oldest, l.oldestSeconds) });
  }
  return [...by]
    .filter(([, w]) => w.oldest > SOURCE_WAIT_BOUND_SECONDS)
    .sort(([a, x], [b, y]) => y.oldest - x.oldest || a.localeCompare(b))
    .map(([source, w]) => ({
      kind: 'source-wait' as const,
      severity: 'warning' as const,
      title: `Partner API: commands of ${source} waiting`,
      count: w.waiting,
      detail: `${w.waiting} waiting for a slot, the oldest for ${fmtAge(Math.round(w.oldest))} (bound ${fmtAge(
        SOURCE_WAIT_BOUND_SECONDS,
      )}): its weight (PMS_WEIGHTS) or the budget is too small for the load`,
      href: stageHref('partner'),
      action: 'see the stage',
    }));
}

export function buildAttention(stages: Stage[], rows: OverviewRows, extra: AttentionRows): AttentionItem[] {
  const items: AttentionItem[] = [];
  for (const r of [...rows.deadLettersOpen].sort((a, b) => b.n - a.n)) {
    items.push({
      kind: 'dead-letters',
      severity: 'warning',
      title: `Dead letters · ${r.reason}`,
      count: r.n,
      detail: `${r.n} open, waiting for a redrive or a discard`,
      href: `#letters/reason=${encodeURIComponent(r.reason)}`,
      action: 'open the letters',
    });
  }
  for (const s of stages) {
    // The dead letters' own stage is the list above; the others by their judged state.
    if (s.id === 'dead-letters' && s.status !== 'stopped') continue;
    if (s.status === 'stopped' || (s.status === 'attention' && s.note.startsWith('not running'))) {
      items.push({
        kind: 'not-running',
        severity: 'danger',
        title: `${s.title}: not running`,
        count:
          s.status === 'stopped'
            ? 1
            : s.note.slice('not running: '.length).split(' · ')[0]!.split(', ').length,
        detail: s.note,
        href: stageHref(s.id),
        action: 'see the stage',
      });
    } else if (s.status === 'stalled') {
      // Outbox, relay and Kafka stall by one rule (the backlog's age): one item, the outbox's.
      if (s.id === 'relay' || s.id === 'kafka') continue;
      items.push({
        kind: 'stalled',
        severity: 'danger',
        title: s.id === 'outbox' ? 'Outbox: backlog past its bound' : `${s.title}: not moving`,
        count: stalledCount(s, rows),
        detail: s.note,
        href: stageHref(s.id),
        action: 'see the stage',
      });
    } else if (s.id === 'partner' && s.status === 'attention') {
      items.push({
        kind: 'throttled',
        severity: 'warning',
        title: 'Partner API: throttled',
        count: 1,
        detail: s.note,
        href: stageHref(s.id),
        action: 'see the stage',
      });
    }
  }
  for (const c of extra.crashLoops) {
    items.push({
      kind: 'crash-loop',
      severity: 'danger',
      title: `${c.role}: crash-looping`,
      count: c.gone,
      detail: `${c.gone} processes running it went away without stopping in the last 10 minutes: read their last log lines`,
      href: stageHref(stageOfRole(c.role)),
      action: 'see the stage',
    });
  }
  if (extra.drift) {
    items.push({
      kind: 'drift',
      severity: 'warning',
      title: `Reconciliation drift · run #${extra.drift.runId}`,
      count: extra.drift.count,
      detail: `${extra.drift.count} items missing, unexpected or unknown on the platform (run finished ${fmtAge(
        Math.max(0, Math.round((Date.now() - extra.drift.finishedAt.getTime()) / 1000)),
      )} ago)`,
      href: `#reconciliation/${extra.drift.runId}`,
      action: 'open the run',
    });
  }
  for (const c of extra.circuits) {
    items.push({
      kind: 'circuit',
      severity: c.state === 'disabled' ? 'danger' : 'warning',
      title: `Callbacks to ${c.source}: ${c.state === 'disabled' ? 'disabled (410 Gone)' : 'circuit open'}`,
      count: c.failures,
      detail:
        c.state === 'disabled'
          ? 'the endpoint answered 410: no callback is sent until it is enabled again'
          : `${c.failures} failures in a row: deliveries paused`,
      href: '#overview/callbacks',
      action: 'see the callbacks',
    });
  }
  items.push(...sourceWaitItems(rows));
  // The stopped flow first, then what waits.
  return items.sort((a, b) => (a.severity === b.severity ? 0 : a.severity === 'danger' ? -1 : 1));
}

/** The stage a role runs (`consumer:<name>` runs the consumers'; `http` the receiver's). */
function stageOfRole(role: string): Stage['id'] {
  if (role.startsWith('consumer:')) return 'consumers';
  if (role === 'http') return 'receiver';
  return role as Stage['id'];
}

/** What a not-moving stage holds up: rows waiting, commands unchanged, resources stale. */
function stalledCount(stage: Stage, rows: OverviewRows): number {
  if (stage.id === 'outbox' || stage.id === 'relay' || stage.id === 'kafka') return rows.outbox.backlog;
  if (stage.id === 'consumers') return rows.commandsStuck;
  if (stage.id === 'poller') return Math.max(1, stage.note.split(',').length);
  return 1;
}
