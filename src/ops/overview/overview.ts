import type { Registry } from 'prom-client';
import type { Db } from '../../db/prisma.js';
import { COMMAND_TOPICS, logicalTopic } from '../../kafka/topics.js';
import { FINAL_STATES } from '../../guard/command-repository.js';
import { LANES } from '../../partner/rate-budget-types.js';
import { OVERVIEW_QUERY_COUNT, readOverviewRows, type MinuteCount } from './overview-repository.js';
import { budgetGauges, sourceKeyGauges, takeSnapshot, type SnapshotRing } from './metric-samples.js';
import {
  COMMAND_STUCK_SECONDS,
  POLLER_STALE_SECONDS,
  RELAY_STALL_SECONDS,
  ageSeconds,
  pollerStatus,
  relayStatus,
  type StageStatus,
} from './stage-rules.js';

/**
 * The console's overview: the flow as stages (receiver → outbox → relay → Kafka → consumers →
 * Partner API, and the poller), each with its figures, its status and small charts over the last
 * hour. Figures from PostgreSQL hold for every process; `in this process` figures come from this
 * process's /metrics.
 */

export interface Series {
  name: string;
  /** One value per minute of `Overview.minutes`. */
  values: number[];
}

export interface Chart {
  title: string;
  unit?: string;
  series: Series[];
}

export interface Stage {
  id: 'receiver' | 'outbox' | 'relay' | 'kafka' | 'consumers' | 'partner' | 'poller' | 'dead-letters';
  title: string;
  status: StageStatus;
  /** Why the status, in a few words. */
  note: string;
  figures: Array<{ label: string; value: string | number }>;
  charts: Chart[];
}

export interface Overview {
  generatedAt: string;
  /** Minute starts (epoch seconds), oldest first: the x axis of every chart. */
  minutes: number[];
  stages: Stage[];
  cost: { queries: number; ms: number };
  rules: { relayStallSeconds: number; commandStuckSeconds: number; pollerStaleSeconds: number };
  /**
   * The relay's catch-up, as its progress log says it: rows waiting, rows published per second
   * over the last minute, and the time left at that rate (null when nothing moves).
   */
  relayProgress: { backlog: number; ratePerSecond: number; etaSeconds: number | null };
}

export interface OverviewDeps {
  db: Db;
  registry: Registry;
  ring: SnapshotRing;
  topicPrefix: string;
  now?: () => number;
}

function minuteAxis(now: number): number[] {
  const last = Math.floor(now / 60000) * 60;
  return Array.from({ length: 60 }, (_, i) => last - (59 - i) * 60);
}

/** Rows `{t, n, ...}` grouped by `keyOf` into series aligned on `minutes`. */
function seriesBy<R extends MinuteCount>(
  rows: R[],
  minutes: number[],
  keyOf: (r: R) => string,
  value: (r: R) => number = (r) => r.n,
  combine: (a: number, b: number) => number = (a, b) => a + b,
): Series[] {
  const index = new Map(minutes.map((m, i) => [m, i]));
  const out = new Map<string, number[]>();
  for (const r of rows) {
    const i = index.get(r.t);
    if (i === undefined) continue;
    const key = keyOf(r);
    const values =
      out.get(key) ??
      out
        .set(
          key,
          minutes.map(() => 0),
        )
        .get(key)!;
    values[i] = combine(values[i]!, value(r));
  }
  return [...out.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, values]) => ({ name, values }));
}

const sum = (series: Series[]) => series.reduce((s, x) => s + x.values.reduce((a, b) => a + b, 0), 0);

function fmtAge(seconds: number | null): string {
  if (seconds == null) return '–';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

export async function buildOverview(deps: OverviewDeps): Promise<Overview> {
  const now = deps.now?.() ?? Date.now();
  const started = performance.now();
  const rows = await readOverviewRows(deps.db, { stuckAfterSeconds: COMMAND_STUCK_SECONDS });
  const ms = Math.round((performance.now() - started) * 10) / 10;
  deps.ring.add(await takeSnapshot(deps.registry, Math.floor(now / 1000)));
  const deltas = deps.ring.deltas();
  const latest = deps.ring.latest()?.totals ?? {};
  const minutes = minuteAxis(now);
  const counterRows = (prefix: string) =>
    Object.entries(deltas)
      .filter(([key]) => key.startsWith(prefix))
      .flatMap(([key, points]) => points.map((p) => ({ key: key.slice(prefix.length), ...p })));

  // Receiver.
  const accepted = seriesBy(rows.webhooks, minutes, (r) => r.source);
  const webhookResults = counterRows('webhooks|');
  const refusedRows = webhookResults.filter((r) => !/\|(accepted|duplicate|unrouted)$/.test(r.key));
  const refused = seriesBy(refusedRows, minutes, (r) => r.key.replace('|', ' · '));
  const refusedTotal = Object.entries(latest)
    .filter(([k]) => k.startsWith('webhooks|') && !/\|(accepted|duplicate|unrouted)$/.test(k))
    .reduce((s, [, v]) => s + v, 0);
  const acceptedHour = sum(accepted);
  const receiver: Stage = {
    id: 'receiver',
    title: 'Receiver',
    status: refused.some((s) => s.values.some((v) => v > 0))
      ? 'attention'
      : acceptedHour > 0
        ? 'moving'
        : 'idle',
    note:
      acceptedHour > 0 ? `${acceptedHour} webhooks stored in the last hour` : 'no webhook in the last hour',
    figures: [
      { label: 'stored, last hour', value: acceptedHour },
      { label: 'refused since start (this process)', value: refusedTotal },
    ],
    charts: [
      { title: 'webhooks stored per minute, by source', series: accepted },
      { title: 'refused per minute (source · result, this process)', series: refused },
    ],
  };

  // Outbox and relay.
  const oldestAge = ageSeconds(rows.outbox.oldestUnpublishedAt, now);
  const published = seriesBy(rows.published, minutes, (r) => logicalTopic(deps.topicPrefix, r.topic));
  const publishedHour = sum(published);
  const relayState = relayStatus(rows.outbox.backlog, oldestAge, publishedHour);
  const lag = seriesBy(
    rows.published,
    minutes,
    () => 'max lag',
    (r) => r.maxLagSeconds,
    Math.max,
  );
  const ratePerSecond = Math.round(rows.outbox.publishedLastMinute / 60);
  const etaSeconds =
    rows.outbox.backlog === 0 ? 0 : ratePerSecond > 0 ? Math.ceil(rows.outbox.backlog / ratePerSecond) : null;
  const stalledNote = `oldest unpublished row waits ${fmtAge(oldestAge)} (> ${RELAY_STALL_SECONDS} s)`;
  const outbox: Stage = {
    id: 'outbox',
    title: 'Outbox',
    status: relayState,
    note:
      relayState === 'stalled'
        ? stalledNote
        : rows.outbox.backlog > 0 && etaSeconds !== null
          ? `${rows.outbox.backlog} rows waiting, about ${fmtAge(etaSeconds)} left at ${ratePerSecond}/s`
          : `${rows.outbox.backlog} rows waiting`,
    figures: [
      { label: 'backlog (unpublished rows)', value: rows.outbox.backlog },
      { label: 'oldest waiting', value: fmtAge(oldestAge) },
      { label: 'time left at the current rate', value: fmtAge(etaSeconds) },
    ],
    charts: [],
  };
  const relay: Stage = {
    id: 'relay',
    title: 'Relay',
    status: relayState,
    note:
      relayState === 'stalled'
        ? stalledNote
        : `last publish ${fmtAge(ageSeconds(rows.outbox.newestPublishedAt, now))} ago`,
    figures: [
      { label: 'published, last hour', value: publishedHour },
      { label: 'publish rate (rows/s, last minute)', value: ratePerSecond },
      { label: 'last publish', value: `${fmtAge(ageSeconds(rows.outbox.newestPublishedAt, now))} ago` },
    ],
    charts: [{ title: 'relay lag (s, created → published, max per minute)', unit: 's', series: lag }],
  };

  // Kafka: what the relay wrote per topic; command topics are listed even when quiet.
  const topics = new Map(published.map((s) => [s.name, s]));
  const commandTopics = [...COMMAND_TOPICS] as string[];
  const kafka: Stage = {
    id: 'kafka',
    title: 'Kafka',
    status: relayState === 'stalled' ? 'stalled' : publishedHour > 0 ? 'moving' : 'idle',
    note: `topics written in the last hour: ${topics.size}`,
    figures: [
      ...commandTopics.map((t) => ({ label: t, value: sum(topics.has(t) ? [topics.get(t)!] : []) })),
      {
        label: 'other topics (partner.*, outcomes, unrouted)',
        value:
          publishedHour - commandTopics.reduce((n, t) => n + sum(topics.has(t) ? [topics.get(t)!] : []), 0),
      },
    ],
    charts: [{ title: 'messages published per minute, by topic', series: published }],
  };

  // Consumers and the guard.
  const finished = seriesBy(rows.commandsFinished, minutes, (r) => r.state);
  const byState = Object.fromEntries(rows.commandsByState.map((r) => [r.state, r.n]));
  const consumers: Stage = {
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

  // Partner API: attempts from PostgreSQL (every process), latency and 429s from this process.
  const attempts = seriesBy(rows.attempts, minutes, (r) => `${r.kind} ${r.result}`);
  const partnerRows = counterRows('partner|');
  const calls = seriesBy(
    partnerRows.filter((r) => r.key.endsWith('|count')),
    minutes,
    (r) => r.key.split('|')[0]!,
  );
  const errors = seriesBy(
    partnerRows.filter((r) => r.key.endsWith('|count') && !/\|[23]\d\d\|count$/.test(r.key)),
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
  const throttled = seriesBy(
    counterRows('throttled').map((r) => ({ ...r, key: '429' })),
    minutes,
    () => '429s',
  );
  const throttledTotal = latest.throttled ?? 0;
  const gauges = await budgetGauges(deps.registry);
  // Which key acts for each PMS source (never the key): its own bounds what it can reach.
  const sourceKeys = await sourceKeyGauges(deps.registry);
  const lanes = new Map<string, number>();
  for (const b of rows.budget) lanes.set(b.lane, (lanes.get(b.lane) ?? 0) + b.n);
  const paused = rows.budgetPausedUntil && rows.budgetPausedUntil.getTime() > now;
  const partner: Stage = {
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
      { label: '429s since start (this process)', value: throttledTotal },
      ...sourceKeys.map(({ source, key }) => ({
        label: `key of source ${source}`,
        value: key === 'own' ? 'its own (PMS_PARTNER_KEYS)' : 'the deployment key',
      })),
    ],
    charts: [
      { title: 'guarded attempts per minute (kind result)', series: attempts },
      { title: 'mean latency per endpoint (ms, this process)', unit: 'ms', series: latency },
      { title: 'errors per minute (endpoint status, this process)', series: [...errors, ...throttled] },
    ],
  };

  // Poller.
  const cursors = rows.pollers.map((c) => ({ ...c, status: pollerStatus(c, now) }));
  const pollerState: StageStatus = cursors.some((c) => c.status === 'stalled')
    ? 'stalled'
    : cursors.some((c) => c.status === 'moving')
      ? 'moving'
      : 'idle';
  const poller: Stage = {
    id: 'poller',
    title: 'Poller',
    status: pollerState,
    note:
      pollerState === 'stalled'
        ? `stale or failing: ${cursors
            .filter((c) => c.status === 'stalled')
            .map((c) => c.resource)
            .join(', ')}`
        : cursors.length
          ? `${cursors.length} resources polled`
          : 'no pass yet',
    figures: cursors.map((c) => ({
      label: c.resource,
      value: `${c.status === 'stalled' ? '⚠ ' : ''}last success ${fmtAge(ageSeconds(c.lastSucceededAt, now))} ago${
        c.lastFailedAt && (!c.lastSucceededAt || c.lastFailedAt > c.lastSucceededAt)
          ? ` · failed: ${c.lastError ?? ''}`
          : ''
      }`,
    })),
    charts: [],
  };

  // Dead letters.
  const arriving = seriesBy(rows.deadLettersArriving, minutes, (r) => r.reason);
  const open = rows.deadLettersOpen.reduce((s, r) => s + r.n, 0);
  const deadLetters: Stage = {
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

  return {
    generatedAt: new Date(now).toISOString(),
    minutes,
    stages: [receiver, outbox, relay, kafka, consumers, partner, poller, deadLetters],
    cost: { queries: OVERVIEW_QUERY_COUNT, ms },
    rules: {
      relayStallSeconds: RELAY_STALL_SECONDS,
      commandStuckSeconds: COMMAND_STUCK_SECONDS,
      pollerStaleSeconds: POLLER_STALE_SECONDS,
    },
    relayProgress: { backlog: rows.outbox.backlog, ratePerSecond, etaSeconds },
  };
}
