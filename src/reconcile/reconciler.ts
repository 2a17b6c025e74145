import { PRODUCE_REQUEST } from '../kafka/kafka-client-settings.js';
import type { Db } from '../db/prisma.js';
import { createCommandRepository } from '../guard/index.js';
import type { SharedProducer } from '../kafka/shared-producer.js';
import { TOPICS, topicName } from '../kafka/topics.js';
import type { Logger } from '../logger.js';
import type { PartnerClient } from '../partner/index.js';
import type { SourcePartners } from '../partner/source-partners.js';
import { reportMessage } from './reconcile-event.js';
import { exposeReconcileMetrics, recordRunMetrics } from './reconcile-metrics.js';
import { createReconcilePass, type PassResult } from './reconcile-pass.js';
import {
  createReconcileRepository,
  type ReconcileRepository,
  type RunRecord,
} from './reconcile-repository.js';
import { createSettler } from './reconcile-settle.js';
import type { ReconcileItem, ReconcileScope } from './reconcile-types.js';

/**
 * Reconciliation wired (issue 45): the pass, the settler, the repository, the metrics and the report
 * event. src/app/reconcile-role.ts builds it from the process's composition root.
 */

export interface ReconcilerDeps {
  db: Db;
  producer: SharedProducer;
  sources: SourcePartners<PartnerClient>;
  logger: Logger;
  topicPrefix: string;
  /** PARTNER_MAX_PROCESSING_MS. */
  maxProcessingMs: number;
  /** RECONCILE_REDRIVE_ABSENT. */
  redriveAbsent: boolean;
}

export interface Reconciler {
  run(scope: ReconcileScope, trigger: string, runId?: number): Promise<PassResult>;
  readonly repository: ReconcileRepository;
}

export function createReconciler(deps: ReconcilerDeps): Reconciler {
  const reconcile = createReconcileRepository(deps.db);
  const log = deps.logger.child({ component: 'reconcile' });
  exposeReconcileMetrics();
  const settler = createSettler({
    db: deps.db,
    commands: createCommandRepository(deps.db),
    reconcile,
    producer: deps.producer,
    logger: log,
    topicPrefix: deps.topicPrefix,
    redriveAbsent: deps.redriveAbsent,
    keyOf: (source) => deps.sources.keyOf(source),
    partnerOf: (source) => deps.sources.forSource(source).partner,
  });

  async function publishReport(run: RunRecord, items: ReconcileItem[]): Promise<void> {
    recordRunMetrics(items);
    try {
      await (
        await deps.producer.get()
      ).send({
        ...PRODUCE_REQUEST,
        topic: topicName(deps.topicPrefix, TOPICS.reconciliationReports),
        messages: [reportMessage(run, items)],
      });
    } catch (error) {
      // The run and its items are in PostgreSQL whatever happens here: the event is a copy.
      log.warn({ err: error, runId: run.id }, 'reconciliation report not published');
    }
  }

  const pass = createReconcilePass({
    reconcile,
    sources: deps.sources,
    settler,
    logger: log,
    maxProcessingMs: deps.maxProcessingMs,
    onRun: publishReport,
  });
  return { run: (scope, trigger, runId) => pass.run(scope, trigger, runId), repository: reconcile };
}
