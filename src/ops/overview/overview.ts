import type { Registry } from 'prom-client';
import type { Db } from '../../db/prisma.js';
import { OVERVIEW_QUERY_COUNT, readOverviewRows } from './overview-repository.js';
import { ROLE_GONE_SECONDS, roleLastSeen } from '../role-heartbeat.js';
import { takeSnapshot, type SnapshotRing } from './metric-samples.js';
import { kafkaStage, outboxAndRelayStages, receiverStage, type StageContext } from './flow-stages.js';
import { readOutboxFlow, readPollerPasses } from './history-repository.js';
import { minuteAxis, type Stage } from './overview-model.js';
import {
  consumersStage,
  deadLettersStage,
  markRolesNotRunning,
  partnerStage,
  pollerStage,
} from './work-stages.js';
import { POLLER_STALE_SECONDS } from '../../poller/pass-staleness.js';
import { COMMAND_STUCK_SECONDS, DEFAULT_RELAY_STALL_SECONDS } from './stage-rules.js';
import { ATTENTION_QUERY_COUNT, buildAttention, readAttentionRows, type AttentionItem } from './attention.js';
import { keyFigure } from './key-figures.js';

export type { Chart, Series, Stage } from './overview-model.js';

/**
 * The console's overview: the flow as stages (receiver → outbox → relay → Kafka → consumers →
 * Partner API, and the poller), each with its figures, its status and small charts over the last
 * hour. Figures from PostgreSQL hold for every process; `in this process` figures come from this
 * process's /metrics.
 */

export interface Overview {
  generatedAt: string;
  /** Minute starts (epoch seconds), oldest first: the x axis of every chart. */
  minutes: number[];
  stages: Stage[];
  /** What needs a person now, the stopped flow first (src/ops/overview/attention.ts); empty: nothing. */
  attention: AttentionItem[];
  cost: { queries: number; ms: number };
  rules: {
    relayStallSeconds: number;
    commandStuckSeconds: number;
    pollerStaleSeconds: number;
    /** A role with no report for this long is "not running". */
    roleGoneSeconds: number;
  };
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
  /** RELAY_STALL_SECONDS: the relay's /readyz and the alert judge by the same bound. Default 120. */
  relayStallSeconds?: number;
  now?: () => number;
}

/** Besides readOverviewRows's: the outbox's flow, the poller's passes, the roles' last reports. */
const MORE_QUERIES = 3;

export async function buildOverview(deps: OverviewDeps): Promise<Overview> {
  const now = deps.now?.() ?? Date.now();
  const relayStallSeconds = deps.relayStallSeconds ?? DEFAULT_RELAY_STALL_SECONDS;
  const minutes = minuteAxis(now);
  const started = performance.now();
  const [rows, outboxFlow, passes, attentionRows] = await Promise.all([
    readOverviewRows(deps.db, { stuckAfterSeconds: COMMAND_STUCK_SECONDS }),
    readOutboxFlow(deps.db),
    readPollerPasses(deps.db, new Date(minutes[0]! * 1000)),
    readAttentionRows(deps.db),
  ]);
  const ms = Math.round((performance.now() - started) * 10) / 10;
  deps.ring.add(await takeSnapshot(deps.registry, Math.floor(now / 1000)));
  const deltas = deps.ring.deltas();
  const ctx: StageContext = {
    rows,
    minutes,
    now,
    latest: deps.ring.latest()?.totals ?? {},
    counterRows: (prefix) =>
      Object.entries(deltas)
        .filter(([key]) => key.startsWith(prefix))
        .flatMap(([key, points]) => points.map((p) => ({ key: key.slice(prefix.length), ...p }))),
  };

  const receiver = receiverStage(ctx);
  const { outbox, relay, published, publishedHour } = outboxAndRelayStages(ctx, {
    topicPrefix: deps.topicPrefix,
    relayStallSeconds,
    outboxFlow,
  });
  const kafka = kafkaStage(published, publishedHour, relay);
  const consumers = consumersStage(ctx);
  const partner = await partnerStage(ctx, deps.registry);
  const poller = pollerStage(ctx, passes);
  const deadLetters = deadLettersStage(ctx);
  markRolesNotRunning(await roleLastSeen(deps.db), { relay, consumers, poller, deadLetters });

  const ratePerSecond = Math.round(rows.outbox.publishedLastMinute / 60);
  const backlog = rows.outbox.backlog;
  const stages = [receiver, outbox, relay, kafka, consumers, partner, poller, deadLetters];
  for (const stage of stages) stage.key = keyFigure(stage, rows);
  return {
    generatedAt: new Date(now).toISOString(),
    minutes,
    stages,
    attention: buildAttention(stages, rows, attentionRows),
    cost: { queries: OVERVIEW_QUERY_COUNT + MORE_QUERIES + ATTENTION_QUERY_COUNT, ms },
    rules: {
      relayStallSeconds,
      commandStuckSeconds: COMMAND_STUCK_SECONDS,
      pollerStaleSeconds: POLLER_STALE_SECONDS,
      roleGoneSeconds: ROLE_GONE_SECONDS,
    },
    relayProgress: {
      backlog,
      ratePerSecond,
      etaSeconds: backlog === 0 ? 0 : ratePerSecond > 0 ? Math.ceil(backlog / ratePerSecond) : null,
    },
  };
}
