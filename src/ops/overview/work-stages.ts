import type { Registry } from 'prom-client';
import { FINAL_STATES } from '../../guard/store/command-repository.js';
import { LANES } from '../../partner/rate-budget-types.js';
import { EXPECTED_ROLES, ROLE_GONE_SECONDS } from '../role-heartbeat.js';
import type { StageContext } from './flow-stages.js';
import { passAgePerMinute, type PollerPassRow } from './history-repository.js';
import { budgetGauges, sharedKeyTrusted, sourceKeyGauges } from './metric-samples.js';
import { fmtAge, seriesBy, sum, type Stage } from './overview-model.js';
import { lastProgressAt, pageProgress, passStatus, passUnderWay } from '../../poller/pass-staleness.js';
import { COMMAND_STUCK_SECONDS, ageSeconds, type StageStatus } from './stage-rules.js';

/** The overview's later stages: consumers, Partner API, poller, dead letters (overview.ts). */

export function consumersStage({ rows, minutes }: StageContext): Stage {
  const finished = seriesBy(rows.commandsFinished, minutes, (r) => r.state);
  const byState = Object.fromEntries(rows.commandsByState.map((r) => [r.state, r.n]));
  return {
    id: 'consumers',
    title: 'Command consumers',
    status:
      rows.commandsStuck > 0
        ? 'stalled'
        : sum(finished) > 0 || (byState.in_flight ?? 0) > 0
          ? 'moving'
          : 'idle',
    note:
      rows.commandsStuck > 0
        ? `${rows.commandsStuck} commands unchanged for > ${COMMAND_STUCK_SECONDS / 60} min`
        : `${sum(finished)} commands finished in the last hour`,
    figures: [
      ...['pending', 'in_flight'].map((state) => ({ label: `${state} now`, value: byState[state] ?? 0 })),
      ...FINAL_STATES.map((state) => ({
        label: `${state}, last hour`,
        value: sum(finished.filter((s) => s.name === state)),
      })),
    ],
    charts: [{ title: 'commands finished per minute, by final state', series: finished }],
  };
}

/** Partner API: attempts from PostgreSQL (every process), latency and 429s from this process. */
export async function partnerStage(ctx: StageContext, registry: Registry): Promise<Stage> {
  const { rows, minutes, now } = ctx;
  const attempts = seriesBy(rows.attempts, minutes, (r) => `${r.kind} ${r.result}`);
  const partnerRows = ctx.counterRows('partner|');
  const counts = partnerRows.filter((r) => r.key.endsWith('|count'));
  const calls = seriesBy(counts, minutes, (r) => r.key.split('|')[0]!);
  const errors = seriesBy(
    counts.filter((r) => !/\|[23]\d\d\|count$/.test(r.key)),
    minutes,
    (r) => r.key.split('|').slice(0, 2).join(' '),
  );
  const latencySum = seriesBy(
    partnerRows.filter((r) => r.key.endsWith('|sum')),
    minutes,
    (r) => r.key.split('|')[0]!,
  );
  const latency = latencySum.map((s) => {
    const count = calls.find((c) => c.name === s.name);
    return {
      name: s.name,
      values: s.values.map((v, i) => (count?.values[i] ? Math.round((v / count.values[i]!) * 1000) : 0)),
    };
  });
  const throttled = seriesBy(ctx.counterRows('throttled'), minutes, () => '429s');
  const gauges = await budgetGauges(registry);
  // Which key acts for each PMS source (never the key): its own bounds what it can reach.
  const sourceKeys = await sourceKeyGauges(registry);
  // Said plainly: the sources share a key by the operator's word, so none is held apart from another.
  const trusted = await sharedKeyTrusted(registry);
  const lanes = new Map<string, number>();
  for (const b of rows.budget) lanes.set(b.lane, (lanes.get(b.lane) ?? 0) + b.n);
  const paused = rows.budgetPausedUntil && rows.budgetPausedUntil.getTime() > now;
  return {
    id: 'partner',
    title: 'Partner API',
    status:
      paused || sum(throttled) > 0 ? 'attention' : sum(attempts) > 0 || sum(calls) > 0 ? 'moving' : 'idle',
    note: paused
      ? `budget paused by Retry-After until ${rows.budgetPausedUntil!.toISOString()}`
      : sum(throttled) > 0
        ? `${sum(throttled)} × 429 in the last hour`
        : `${sum(attempts)} guarded attempts in the last hour`,
    figures: [
      ...LANES.map((lane) => {
        const g = gauges.find((x) => x.lane === lane);
        const limit = g ? g.used + g.left : null;
        return {
          label: `budget ${lane}, last minute`,
          value: `${lanes.get(lane) ?? 0}${limit ? ` / ${limit}` : ''}`,
        };
      }),
      { label: '429s since start (this process)', value: ctx.latest.throttled ?? 0 },
      ...sourceShares(rows.budgetSources),
      ...sourceKeys.map(({ source, key }) => ({
        label: `key of source ${source}`,
        value:
          key === 'own'
            ? 'its own (PMS_PARTNER_KEYS)'
            : trusted
              ? 'the deployment key, shared with the other sources (PMS_SHARED_PARTNER_KEY=trusted)'
              : 'the deployment key',
      })),
      ...(trusted
        ? [
            {
              label: 'sources held apart',
              value: "no: PMS_SHARED_PARTNER_KEY=trusted, each source can reach the others' tenants",
            },
          ]
        : []),
    ],
    charts: [
      { title: 'guarded attempts per minute (kind result)', series: attempts },
      { title: 'mean latency per endpoint (ms, this process)', unit: 'ms', series: latency },
      { title: 'errors per minute (endpoint status, this process)', series: [...errors, ...throttled] },
    ],
  };
}

/**
 * Each PMS source's share of the writes and read-backs of the last minute, and its commands waiting
 * for a slot (issue 52: the budget is shared by source, PMS_WEIGHTS).
 */
function sourceShares(lines: StageContext['rows']['budgetSources']) {
  const total = new Map<string, number>();
  for (const l of lines) total.set(l.budget, (total.get(l.budget) ?? 0) + l.used);
  return lines
    .filter((l) => l.source !== null)
    .sort((a, b) => a.source!.localeCompare(b.source!))
    .map((l) => {
      const all = total.get(l.budget) ?? 0;
      const share = all > 0 ? Math.round((100 * l.used) / all) : 0;
      const waiting =
        l.waiting > 0 ? ` · ${l.waiting} waiting, oldest ${fmtAge(Math.round(l.oldestSeconds ?? 0))}` : '';
      return {
        label: `share of source ${l.source}, last minute`,
        value: `${l.used} request${l.used === 1 ? '' : 's'} (${share} %)${waiting}`,
      };
    });
}

/**
 * A resource's figure: its pass under way (its page, when the latest arrived; the age of its last
 * success is on the chart), else its last success (and failure).
 */
function pollerFigure(c: StageContext['rows']['pollers'][number], status: StageStatus, now: number): string {
  const mark = status === 'stalled' ? '⚠ ' : '';
  const progress = lastProgressAt(c);
  if (progress)
    return `${mark}pass under way: ${pageProgress(c.resource, c.passPages ?? 0, c.passPageCount)}, ${fmtAge(
      ageSeconds(progress, now),
    )} ago`;
  const failed = c.lastFailedAt && (!c.lastSucceededAt || c.lastFailedAt > c.lastSucceededAt);
  return `${mark}last success ${fmtAge(ageSeconds(c.lastSucceededAt, now))} ago${
    failed ? ` · failed: ${c.lastError ?? ''}` : ''
  }`;
}

export function pollerStage({ rows, minutes, now }: StageContext, passes: PollerPassRow[]): Stage {
  const cursors = rows.pollers.map((c) => ({ ...c, status: passStatus(c, now) }));
  const underWay = cursors.filter((c) => c.status === 'moving' && passUnderWay(c));
  const state: StageStatus = cursors.some((c) => c.status === 'stalled')
    ? 'stalled'
    : cursors.some((c) => c.status === 'moving')
      ? 'moving'
      : 'idle';
  const stale = cursors.filter((c) => c.status === 'stalled').map((c) => c.resource);
  return {
    id: 'poller',
    title: 'Poller',
    status: state,
    note:
      state === 'stalled'
        ? `stale or failing: ${stale.join(', ')}`
        : underWay.length
          ? `pass under way: ${underWay
              .map((c) => `${c.resource} ${pageProgress(c.resource, c.passPages ?? 0, c.passPageCount)}`)
              .join(', ')}`
          : cursors.length
            ? `${cursors.length} resources polled`
            : 'no pass yet',
    figures: cursors.map((c) => ({ label: c.resource, value: pollerFigure(c, c.status, now) })),
    charts: [
      {
        title: 'age of the last successful pass (s, end of each minute), by resource',
        unit: 's',
        kind: 'level',
        series: passAgePerMinute(passes, minutes, now),
      },
    ],
  };
}

export function deadLettersStage({ rows, minutes }: StageContext): Stage {
  const arriving = seriesBy(rows.deadLettersArriving, minutes, (r) => r.reason);
  const open = rows.deadLettersOpen.reduce((s, r) => s + r.n, 0);
  return {
    id: 'dead-letters',
    title: 'Dead letters',
    status: open > 0 ? 'attention' : 'idle',
    note: open > 0 ? `${open} open letters wait for an operator` : 'none open',
    figures: [
      { label: 'open', value: open },
      ...rows.deadLettersOpen.map((r) => ({ label: `open · ${r.reason}`, value: r.n })),
      { label: 'arrived, last hour', value: sum(arriving) },
    ],
    charts: [{ title: 'dead letters arriving per minute, by reason', series: arriving }],
  };
}

/**
 * "Not running" rather than "idle": a stage whose role no process has reported for
 * ROLE_GONE_SECONDS. Judged only when some role reported within the hour: the process serving this
 * overview reports its own, so none at all means components run outside `runRoles` (tests, a
 * library use), where there is nothing to judge by.
 */
export function markRolesNotRunning(
  seen: Map<string, number | null>,
  stages: { relay: Stage; consumers: Stage; poller: Stage; deadLetters: Stage },
): void {
  if (![...seen.values()].some((age) => age != null)) return;
  const gone = (role: string) => {
    const age = seen.get(role);
    return age == null || age > ROLE_GONE_SECONDS;
  };
  const stop = (stage: Stage, what: string) => {
    stage.status = 'stopped';
    stage.note = `not running: no ${what} process has reported for over ${ROLE_GONE_SECONDS} s · ${stage.note}`;
  };
  if (gone('relay')) stop(stages.relay, 'relay');
  if (gone('poller')) stop(stages.poller, 'poller');
  if (gone('dead-letters')) stop(stages.deadLetters, 'dead-letter indexer');
  const consumers = EXPECTED_ROLES.filter((r) => r.startsWith('consumer:'));
  const missing = consumers.filter(gone).map((r) => r.slice('consumer:'.length));
  if (missing.length === consumers.length) stop(stages.consumers, 'command consumer');
  else if (missing.length > 0) {
    stages.consumers.status = stages.consumers.status === 'stalled' ? 'stalled' : 'attention';
    stages.consumers.note = `not running: ${missing.join(', ')} · ${stages.consumers.note}`;
  }
}
