import { AsyncLocalStorage } from 'node:async_hooks';
import { createCommandConsumer } from '../command-consumer/command-consumer.js';
import { commandTypeByName, commandTypeNames } from '../command-types/command-types.js';
import type { Config } from '../config/config.js';
import { createDeadLetterIndexer } from '../dead-letters/dead-letter-indexer.js';
import { createCallbacks } from '../callbacks/callbacks.js';
import { UsageError } from '../errors.js';
import { createSnapshotStore, type GuardOptions } from '../guard/index.js';
import { createSharedProducer, type SharedProducer } from '../kafka/shared-producer.js';
import { createLogger, type Logger } from '../logger.js';
import { resolveLogFormat } from '../log-format.js';
import {
  createPartnerClient,
  budgetShares,
  createRateBudget,
  type PartnerClient,
  type RateBudget,
} from '../partner/index.js';
import {
  createPoller,
  createRequestCounter,
  pollerIntervals,
  type PassSummary,
  type RequestCounter,
} from '../poller/index.js';
import type { Resource } from '../partner/resources.js';
import {
  createSourcePartners,
  publishSourceKeys,
  sourceKeys,
  type SourcePartners,
} from '../partner/source-partners.js';
import { relayRoleCheck, type RoleCheck } from './readiness.js';
import { createRelay, type Relay } from '../relay/relay.js';
import { createConfiguredRetentionPruner } from '../retention/retention-pruner.js';
import { createResync, type Resync, type ResyncOptions } from '../resync/resync.js';
import { createRuntime, type Runtime } from './runtime.js';
import { createHttpRole, type HttpRole } from './http-role.js';
import type { Component } from './lifecycle.js';

/**
 * The one composition root (docs/decisions/017-composition-root.md). A process builds one: it
 * owns the database, Kafka with ONE producer, ONE Partner API client with its rate budget and
 * token manager, and builds the components (roles) a CLI command asks for, each with the same
 * `start()` / `stop()` shape (src/app/lifecycle.ts). `close()` releases what they share, after
 * they have stopped.
 */

/** A consumer per entry of the list of command types (src/contracts/command-contracts.ts), by name. */
export type CommandConsumerName = string;
export const COMMAND_CONSUMER_NAMES: readonly CommandConsumerName[] = commandTypeNames();

export interface PollerComponent extends Component {
  /** One pass over every resource (or one): `rentbridge poll --once`. */
  runOnce(resource?: Resource): Promise<PassSummary[]>;
}

export interface CompositionRoot extends Runtime {
  /** The process's one Kafka producer (connected on first use). */
  readonly producer: SharedProducer;
  /**
   * The process's one Partner API client on the shared budget (PARTNER_RATE_LIMIT_PER_MINUTE).
   * The base URL is PARTNER_API_URL unless `usePartnerUrl` set another (the demo's sandbox).
   */
  partner(): { partner: PartnerClient; budget: RateBudget };
  /**
   * The client acting for each PMS source (PMS_PARTNER_KEYS, else the deployment key's), every one
   * on the same budget. The poller never uses it: it keeps the deployment key.
   */
  sourcePartners(): SourcePartners<PartnerClient>;
  /** Points the Partner client at another base URL (the embedded sandbox); before its first use. */
  usePartnerUrl(url: string): void;
  /** The receiver's HTTP: webhooks, ops, customer tokens, /metrics and health (`receiver`, `start`). */
  http(): HttpRole;
  /** /metrics, /healthz and /readyz only, on HTTP_PORT: a relay, poller or consumer process. */
  probes(): HttpRole;
  /** Called once every role has started: /readyz stops answering "starting". */
  markStarted(): void;
  /** `readiness()` and `status()` are what the relay's /readyz and progress report (issue 33). */
  relay(): Component & Pick<Relay, 'drain' | 'isPublisher' | 'status' | 'readiness'>;
  poller(): PollerComponent;
  /** `rentbridge resync`: on the poll lane of the shared budget, its requests counted per resource. */
  resync(options?: Pick<ResyncOptions, 'onProgress' | 'isStopping'>): Resync & {
    requests(resource: Resource): number;
  };
  commandConsumer(
    name: CommandConsumerName,
    options?: { guard?: GuardOptions },
  ): Component & {
    readonly groupId: string;
  };
  deadLetterIndexer(): Component;
  /** Outcome callbacks to PMS sources (PMS_CALLBACKS), or null when no source has one. */
  callbacks(): (Component & { readonly groupId: string }) | null;
}

/** Beside a running `npm start`, its embedded sandbox answers on SANDBOX_PORT with the default keys. */
const noPartnerUrl = (sandboxPort: number) =>
  `PARTNER_API_URL is not set: point it at the Partner API; beside a running \`npm start\` (demo), set PARTNER_API_URL=http://127.0.0.1:${sandboxPort} (its embedded sandbox, SANDBOX_PORT) and leave the PARTNER_*_KEY variables unset`;

export function createCompositionRoot(
  config: Config,
  logger: Logger = createLogger({ level: config.LOG_LEVEL, format: resolveLogFormat(config.LOG_FORMAT) }),
): CompositionRoot {
  const runtime = createRuntime(config, logger);
  let partnerUrl = config.PARTNER_API_URL;
  let producer: SharedProducer | undefined;
  let partner: { partner: PartnerClient; budget: RateBudget } | undefined;
  let sources: SourcePartners<PartnerClient> | undefined;
  publishSourceKeys(config);
  // The poller counts the requests of its own passes (PassSummary.stats.requests) through the
  // one client: its passes run in this scope, the other roles' calls are not counted.
  const pollerScope = new AsyncLocalStorage<RequestCounter>();
  // Each role built adds its own readiness check; /readyz reads them at each request.
  const roleChecks: RoleCheck[] = [];
  let started = false;
  const roles = () => ({ started, checks: roleChecks });

  function sharedProducer(): SharedProducer {
    producer ??= createSharedProducer(runtime.kafka);
    return producer;
  }

  function sharedPartner(): { partner: PartnerClient; budget: RateBudget } {
    if (partner) return partner;
    if (!partnerUrl) throw new UsageError(noPartnerUrl(config.SANDBOX_PORT));
    const budget = createRateBudget({
      db: runtime.db,
      limitPerMinute: config.PARTNER_RATE_LIMIT_PER_MINUTE,
      logger,
      shares: budgetShares(config),
    });
    const client = createPartnerClient({
      baseUrl: partnerUrl,
      accessKey: config.PARTNER_ACCESS_KEY,
      secretKey: config.PARTNER_SECRET_KEY,
      enhancedSecurity: config.PARTNER_ENHANCED_SECURITY,
      timeoutMs: config.PARTNER_TIMEOUT_MS,
      budget,
      logger,
      fetch: (input, init) => (pollerScope.getStore()?.fetch ?? globalThis.fetch)(input, init),
    });
    partner = { partner: client, budget };
    return partner;
  }

  function bySource(): SourcePartners<PartnerClient> {
    sources ??= createSourcePartners({
      deployment: () => sharedPartner().partner,
      keys: sourceKeys(config),
      // A source's own key: its own client and cached API token, on the deployment's budget (the
      // limits are per egress IP, spec 8). Not in the poller's scope: only the poller's requests count.
      build: (_source, key) =>
        createPartnerClient({
          baseUrl: partnerUrl!,
          accessKey: key.accessKey,
          secretKey: key.secretKey,
          enhancedSecurity: config.PARTNER_ENHANCED_SECURITY,
          timeoutMs: config.PARTNER_TIMEOUT_MS,
          budget: sharedPartner().budget,
          logger,
        }),
    });
    return sources;
  }

  return {
    config,
    logger,
    get db() {
      return runtime.db;
    },
    get kafka() {
      return runtime.kafka;
    },
    ensureTopics: () => runtime.ensureTopics(),
    get producer() {
      return sharedProducer();
    },
    partner: sharedPartner,
    sourcePartners: bySource,
    usePartnerUrl(url) {
      if (partner && url !== partnerUrl) throw new Error('the Partner API client is already built');
      partnerUrl = url;
    },

    http() {
      return createHttpRole(runtime, {
        ...(partnerUrl && { partnerUrl }),
        producer: sharedProducer(),
        roles,
      });
    },

    probes() {
      return createHttpRole(runtime, { receiver: false, roles });
    },

    markStarted() {
      started = true;
    },

    relay() {
      const relay = createRelay({
        db: runtime.db,
        kafka: runtime.kafka,
        producer: sharedProducer(),
        logger,
        databaseUrl: config.DATABASE_URL,
        topicPrefix: config.KAFKA_TOPIC_PREFIX,
        retentionHours: config.OUTBOX_RETENTION_HOURS,
        maxBatchBytes: config.RELAY_MAX_BATCH_BYTES,
        stallSeconds: config.RELAY_STALL_SECONDS,
        sendTimeoutMs: config.RELAY_SEND_TIMEOUT_MS,
        batchSize: config.RELAY_BATCH_ROWS,
      });
      roleChecks.push(relayRoleCheck(relay, runtime.db, config.RELAY_STALL_SECONDS));
      // The relay already prunes the outbox: it keeps every other table within its retention too.
      const retention = createConfiguredRetentionPruner(runtime.db, logger, config);
      return {
        name: 'relay',
        start: async () => {
          await relay.start();
          retention.start();
        },
        stop: async () => {
          await retention.stop();
          await relay.stop();
        },
        drain: () => relay.drain(),
        isPublisher: () => relay.isPublisher(),
        status: () => relay.status(),
        readiness: () => relay.readiness(),
      };
    },

    poller() {
      const { partner: client } = sharedPartner();
      const requestCounter = createRequestCounter();
      const poller = createPoller({
        partner: client,
        db: runtime.db,
        databaseUrl: config.DATABASE_URL,
        logger,
        intervals: pollerIntervals(config),
        defaultIntervalSeconds: config.POLL_INTERVAL_SECONDS,
        requestCounter,
        // The deployment key's reads: the snapshots of commands acting with it may rest on them.
        ...(config.SNAPSHOT_MAX_AGE_MS > 0 && {
          snapshots: createSnapshotStore({
            db: runtime.db,
            keyId: 'deployment',
            maxAgeMs: config.SNAPSHOT_MAX_AGE_MS,
          }),
        }),
      });
      roleChecks.push({
        name: 'poller',
        check: () => poller.health.check(),
        details: () => poller.health.details(),
      });
      return {
        name: 'poller',
        start: () => pollerScope.run(requestCounter, () => poller.start()),
        stop: () => poller.stop(),
        runOnce: (resource) => pollerScope.run(requestCounter, () => poller.runOnce(resource)),
      };
    },

    resync(options = {}) {
      const { partner: client } = sharedPartner();
      const requestCounter = createRequestCounter();
      const resync = createResync({ partner: client, db: runtime.db, logger, ...options });
      return {
        run: (opts) => pollerScope.run(requestCounter, () => resync.run(opts)),
        requests: (resource) => requestCounter.count(resource),
      };
    },

    commandConsumer(name, options = {}) {
      const type = commandTypeByName(name);
      if (!type) throw new UsageError(`no command consumer "${name}"`);
      // The client's transport pauses the shared budget on a 429, for every process sharing it.
      const consumer = createCommandConsumer(type, {
        kafka: runtime.kafka,
        producer: sharedProducer(),
        db: runtime.db,
        databaseUrl: config.DATABASE_URL,
        partner: sharedPartner().partner,
        partners: bySource(),
        logger,
        topicPrefix: config.KAFKA_TOPIC_PREFIX,
        concurrency: config.CONSUMER_CONCURRENCY,
        readAhead: config.CONSUMER_READ_AHEAD,
        sessionTimeoutMs: config.KAFKA_SESSION_TIMEOUT_MS,
        // The guard's processing bound comes from the configured assumption (PARTNER_MAX_PROCESSING_MS).
        guard: { maxProcessingMs: config.PARTNER_MAX_PROCESSING_MS, ...options.guard },
        snapshotMaxAgeMs: config.SNAPSHOT_MAX_AGE_MS,
      });
      roleChecks.push({
        name: `consumer:${name}`,
        check: () => consumer.health.check(),
        details: (admin) => consumer.health.details(admin),
      });
      return {
        name: `consumer:${name}`,
        groupId: consumer.groupId,
        start: () => consumer.start(),
        stop: () => consumer.stop(),
      };
    },

    deadLetterIndexer() {
      const indexer = createDeadLetterIndexer({
        db: runtime.db,
        kafka: runtime.kafka,
        logger,
        topicPrefix: config.KAFKA_TOPIC_PREFIX,
      });
      roleChecks.push({
        name: 'consumer:dead-letters',
        check: () => indexer.health().check(),
        details: (admin) => indexer.health().details(admin),
      });
      return { name: 'dead-letters', start: () => indexer.start(), stop: () => indexer.stop() };
    },

    callbacks() {
      if (Object.keys(config.PMS_CALLBACKS).length === 0) return null;
      const callbacks = createCallbacks({ db: runtime.db, kafka: runtime.kafka, logger, config });
      roleChecks.push({
        name: 'callbacks',
        check: () => callbacks.health().check(),
        details: (admin) => callbacks.health().details(admin),
      });
      return callbacks;
    },

    /** After every component has stopped: the producer, the budget, then the database. */
    async close() {
      await producer?.close();
      await partner?.budget.close?.();
      await runtime.close();
    },
  };
}

// Moved to its own file (size limits); re-exported so every caller keeps its import.
export { runRoles } from './run-roles.js';
