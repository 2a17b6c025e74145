import { COMMAND_TOPICS, logicalTopic } from '../../kafka/topics.js';
import { backlogPerMinute, type OutboxFlowRows } from './history-repository.js';
import type { OverviewRows } from './overview-repository.js';
import { fmtAge, seriesBy, sum, type Series, type Stage } from './overview-model.js';
import { ageSeconds, relayStatus } from './stage-rules.js';

/** The overview's first stages: receiver, outbox, relay and Kafka (src/ops/overview/overview.ts). */

export interface StageContext {
  rows: OverviewRows;
  minutes: number[];
  now: number;
  /** Per-minute increases of this process's counters whose key starts with `prefix` (prefix cut). */
  counterRows: (prefix: string) => Array<{ key: string; t: number; n: number }>;
  /** This process's counter totals now. */
  latest: Record<string, number>;
}

export function receiverStage({ rows, minutes, counterRows, latest }: StageContext): Stage {
  const accepted = seriesBy(rows.webhooks, minutes, (r) => r.source);
  const refusedRows = counterRows('webhooks|').filter((r) => !/\|(accepted|duplicate|unrouted)$/.test(r.key));
  const refused = seriesBy(refusedRows, minutes, (r) => r.key.replace('|', ' · '));
  const refusedTotal = Object.entries(latest)
    .filter(([k]) => k.startsWith('webhooks|') && !/\|(accepted|duplicate|unrouted)$/.test(k))
    .reduce((s, [, v]) => s + v, 0);
  const acceptedHour = sum(accepted);
  return {
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
}

/** Outbox and relay share one rule (RELAY_STALL_SECONDS, as /readyz and the alert). */
export function outboxAndRelayStages(
  { rows, minutes, now }: StageContext,
  options: { topicPrefix: string; relayStallSeconds: number; outboxFlow: OutboxFlowRows },
): { outbox: Stage; relay: Stage; published: Series[]; publishedHour: number } {
  const { relayStallSeconds } = options;
  const oldestAge = ageSeconds(rows.outbox.oldestUnpublishedAt, now);
  const published = seriesBy(rows.published, minutes, (r) => logicalTopic(options.topicPrefix, r.topic));
  const publishedHour = sum(published);
  const relayState = relayStatus(rows.outbox.backlog, oldestAge, publishedHour, relayStallSeconds);
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
  const stalledNote = `oldest unpublished row waits ${fmtAge(oldestAge)} (> ${relayStallSeconds} s, RELAY_STALL_SECONDS)`;
  const lastPublish = fmtAge(ageSeconds(rows.outbox.newestPublishedAt, now));
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
    charts: [
      {
        title: 'backlog (unpublished rows, end of each minute)',
        kind: 'level',
        series: [{ name: 'backlog', values: backlogPerMinute(options.outboxFlow, minutes) }],
      },
    ],
  };
  const relay: Stage = {
    id: 'relay',
    title: 'Relay',
    status: relayState,
    note: relayState === 'stalled' ? stalledNote : `last publish ${lastPublish} ago`,
    figures: [
      { label: 'published, last hour', value: publishedHour },
      // Rows, not a rounded rate: a few rows a minute read "0/s" beside "last publish 0 s ago".
      { label: 'published, last 60 s', value: rows.outbox.publishedLastMinute },
      { label: 'last publish', value: `${lastPublish} ago` },
    ],
    charts: [{ title: 'relay lag (s, created → published, max per minute)', unit: 's', series: lag }],
  };
  return { outbox, relay, published, publishedHour };
}

/** Kafka: what the relay wrote per topic; command topics are listed even when quiet. */
export function kafkaStage(published: Series[], publishedHour: number, relay: Stage): Stage {
  const topics = new Map(published.map((s) => [s.name, s]));
  const commandTopics = [...COMMAND_TOPICS] as string[];
  const ofTopic = (t: string) => sum(topics.has(t) ? [topics.get(t)!] : []);
  return {
    id: 'kafka',
    title: 'Kafka',
    status: relay.status === 'stalled' ? 'stalled' : publishedHour > 0 ? 'moving' : 'idle',
    note: `topics written in the last hour: ${topics.size}`,
    figures: [
      ...commandTopics.map((t) => ({ label: t, value: ofTopic(t) })),
      {
        label: 'other topics (partner.*, outcomes, unrouted)',
        value: publishedHour - commandTopics.reduce((n, t) => n + ofTopic(t), 0),
      },
    ],
    charts: [{ title: 'messages published per minute, by topic', series: published }],
  };
}
