import { afterAll, beforeAll } from 'vitest';
import { createCompositionRoot, type CompositionRoot } from '../../src/app/composition-root.js';
import type { Component } from '../../src/app/lifecycle.js';
import { loadConfig } from '../../src/config/config.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createReconciler, type Reconciler } from '../../src/reconcile/reconciler.js';
import { TEST_MAX_PROCESSING_MS, createHarness, logger, type Harness } from '../consumers/support/harness.js';
import { buildSecret } from '../receiver/webhooks.js';

/**
 * The world of a `rentbridge reconcile` test (issue 45), as hooks of the calling `describe`: the
 * consumers' harness (its schema, Kafka prefix and sandbox) and a composition root on it, with a
 * webhook secret for each PMS source (one source per case, so the cases never see each other's
 * commands) and the roles `roles` builds, started in order and stopped in reverse.
 */
export interface ReconcileRootOptions {
  sources: string[];
  /** Before the root is built: keys, a callback receiver; answers more configuration. */
  prepare?: (h: Harness) => Promise<Record<string, string>>;
  roles: (root: CompositionRoot) => Component[];
  /** After the roles and the root have stopped, before the harness closes. */
  cleanup?: () => Promise<void>;
}

export interface ReconcileRoot {
  readonly h: Harness;
  readonly root: CompositionRoot;
  /** The configuration the root was built from (for the CLI run against the same world). */
  readonly env: Record<string, string>;
  reconciler(redriveAbsent?: boolean): Reconciler;
  /** One pass over the last ten minutes, for one source. */
  reconcile(source: string, redriveAbsent?: boolean): ReturnType<Reconciler['run']>;
}

export function useReconcileRoot(options: ReconcileRootOptions): ReconcileRoot {
  let h: Harness | undefined;
  let root: CompositionRoot | undefined;
  let env: Record<string, string> = {};
  let roles: Component[] = [];

  beforeAll(async () => {
    h = await createHarness();
    await h.kafka.createTopics([TOPICS.reconciliationReports]);
    const more = (await options.prepare?.(h)) ?? {};
    env = {
      DATABASE_URL: h.database.url,
      KAFKA_BROKERS: h.kafka.brokers.join(','),
      KAFKA_TOPIC_PREFIX: h.kafka.prefix,
      PARTNER_TIMEOUT_MS: '1500',
      PARTNER_MAX_PROCESSING_MS: String(TEST_MAX_PROCESSING_MS),
      PMS_WEBHOOK_SECRETS: JSON.stringify(
        Object.fromEntries(options.sources.map((s) => [s, [buildSecret()]])),
      ),
      // The reconciliation's sources act with the deployment key (they trust each other).
      PMS_SHARED_PARTNER_KEY: 'trusted',
      LOG_LEVEL: 'silent',
      HTTP_PORT: '0',
      ...more,
    };
    root = createCompositionRoot(loadConfig(env), logger);
    root.usePartnerUrl(h.sandbox.url);
    roles = options.roles(root);
    for (const role of roles) await role.start();
  });

  afterAll(async () => {
    for (const role of [...roles].reverse()) await role.stop().catch(() => undefined);
    await root?.close();
    await options.cleanup?.();
    await h?.close();
  });

  const fixture: ReconcileRoot = {
    get h() {
      return h!;
    },
    get root() {
      return root!;
    },
    get env() {
      return env;
    },
    reconciler: (redriveAbsent = false) =>
      createReconciler({
        db: h!.database.db,
        producer: root!.producer,
        sources: root!.sourcePartners(),
        logger,
        topicPrefix: h!.kafka.prefix,
        maxProcessingMs: TEST_MAX_PROCESSING_MS,
        redriveAbsent,
      }),
    reconcile: (source, redriveAbsent = false) => {
      const now = Date.now();
      return fixture
        .reconciler(redriveAbsent)
        .run({ since: new Date(now - 600_000), until: new Date(now + 1000), source }, 'cli');
    },
  };
  return fixture;
}
