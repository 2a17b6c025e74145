import { createReconcileSchedule } from '../reconcile/reconcile-schedule.js';
import { createReconciler, type Reconciler } from '../reconcile/reconciler.js';
import type { CompositionRoot } from './composition-root.js';
import type { Component } from './lifecycle.js';

/**
 * Reconciliation (src/reconcile/) built from the process's composition root: its one producer, its
 * Partner client per source on the shared budget, its configuration.
 */

export function reconcilerOf(root: CompositionRoot): Reconciler {
  return createReconciler({
    db: root.db,
    producer: root.producer,
    sources: root.sourcePartners(),
    logger: root.logger,
    topicPrefix: root.config.KAFKA_TOPIC_PREFIX,
    maxProcessingMs: root.config.PARTNER_MAX_PROCESSING_MS,
    redriveAbsent: root.config.RECONCILE_REDRIVE_ABSENT,
  });
}

/** The scheduled pass as a role's component, or null when RECONCILE_INTERVAL is 0. */
export function scheduledReconcile(root: CompositionRoot): Component | null {
  const intervalSeconds = root.config.RECONCILE_INTERVAL;
  if (intervalSeconds === 0) return null;
  return createReconcileSchedule({
    reconciler: reconcilerOf(root),
    databaseUrl: root.config.DATABASE_URL,
    logger: root.logger,
    intervalSeconds,
  });
}
