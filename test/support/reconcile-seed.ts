import type { Db } from '../../src/db/prisma.js';
import type { SharedProducer } from '../../src/kafka/shared-producer.js';
import type { Logger } from '../../src/logger.js';
import type { PartnerClient } from '../../src/partner/index.js';
import { createSourcePartners } from '../../src/partner/source-partners.js';
import { createReconciler, type Reconciler } from '../../src/reconcile/reconciler.js';

/**
 * Seeding for a reconciliation pass without the consumers (the console's Reconciliation page test,
 * `npm run bench -- reconcile`): commands written straight into `commands` as the guard leaves an
 * applied one, and a reconciler that reads every source with one Partner API client.
 */

/** A guard row as the guard leaves an applied command. */
export function appliedCommand(
  source: string,
  commandType: string,
  commandId: string,
  targetId: string,
  payload: object,
) {
  return {
    source,
    commandId,
    commandType,
    targetId,
    state: 'applied',
    payload,
    attempts: 1,
    requestIdBase: commandId,
    requestIds: [`${commandId}.a1`],
    finishedAt: new Date(),
  };
}

/** A reconciler whose every source reads with `partner`; never redrives absent commands. */
export function reconcilerWith(deps: {
  db: Db;
  partner: PartnerClient;
  producer: SharedProducer;
  logger: Logger;
  topicPrefix: string;
}): Reconciler {
  return createReconciler({
    db: deps.db,
    producer: deps.producer,
    sources: createSourcePartners({ deployment: () => deps.partner, keys: {}, build: () => deps.partner }),
    logger: deps.logger,
    topicPrefix: deps.topicPrefix,
    maxProcessingMs: 30_000,
    redriveAbsent: false,
  });
}
