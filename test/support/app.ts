import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Producer } from 'kafkajs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { createCallbacks, type Callbacks } from '../../src/callbacks/callbacks.js';
import { createDeadLetterIndexer } from '../../src/dead-letters/dead-letter-indexer.js';

type DeadLetterIndexer = ReturnType<typeof createDeadLetterIndexer>;
import type { CommandConsumerDeps } from '../../src/command-consumer/command-consumer.js';
import type { CommandType } from '../../src/command-types/command-type.js';
import { loadConfig } from '../../src/config/config.js';
import { createHttpApp } from '../../src/http/http-app.js';
import { requestId } from '../../src/http/request-id.js';
import { createLogger } from '../../src/logger.js';
import { createOpsRouter, type OpsRouter, type OpsRouterOptions } from '../../src/ops/ops-router.js';
import { createRelay, type Relay, type RelayOptions } from '../../src/relay/relay.js';
import { startReceiver as startCallbackEndpoint, type Behaviour } from '../callbacks/callback-receiver.js';
import { createHarness, logger as harnessLogger, type Harness } from '../consumers/support/harness.js';
import { launchChromium } from '../e2e/browser.js';
import { retry, startReceiver, type TestReceiver } from '../receiver/webhooks.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { createTestKafka, type TestKafka } from './kafka.js';

/** The receiver's options that are not its database. */
export type ReceiverOptions = Omit<Parameters<typeof startReceiver>[0], 'db' | 'databaseUrl'>;

export interface AppOptions {
  /**
   * The consumers' harness (sandbox, producer, collector) gives the database and broker; else a
   * database of its own and, with `topics`, a topic prefix on the broker with those topics.
   */
  harness?: boolean;
  /** With the harness: command consumers started first (as `harness.startConsumer`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a list of command types, each of its own command
  consumers?: Array<CommandType<any>>;
  /** What every one of those consumers is given beside the harness's own (e.g. a faster guard). */
  consumerOverrides?: Partial<CommandConsumerDeps>;
  topics?: string[] | 'all';
  /** A connected producer on the broker (the harness has one already). */
  producer?: boolean;
  /** A receiver taking signed webhooks on a free port. */
  receiver?: ReceiverOptions;
  /** A relay on the database and broker (RELAY defaults of the tests), started unless `start: false`. */
  relay?: Partial<RelayOptions> & { start?: boolean };
  /**
   * The ops router on a free port: mounted by the process's own HTTP app (`app: 'http'`, the
   * default) or, as the console's pages are tested, by a bare express app with a request id.
   */
  ops?: Omit<OpsRouterOptions, 'db' | 'logger' | 'topicPrefix' | 'producer'> & {
    app?: 'http' | 'express';
    /** Its KAFKA_TOPIC_PREFIX where no broker is asked for; default the broker's prefix. */
    topicPrefix?: string;
  };
  /**
   * The PMSs' callback endpoint (test/callbacks/callback-receiver.ts; each source answers 200
   * unless `behaviours` says otherwise) and the callbacks process delivering to it (PMS_CALLBACKS
   * of those sources, CALLBACK_POLL_MS 100).
   */
  callbacks?: { secrets: Record<string, string[]>; behaviours?: Record<string, Behaviour> };
  /** The dead-letter indexer (`rentbridge consumer dead-letters`) on the test's topics. */
  deadLetterIndexer?: boolean;
  /** Debian's Chromium, headless (test/e2e/browser.ts). */
  browser?: boolean;
}

export type CallbackEndpoint = Awaited<ReturnType<typeof startCallbackEndpoint>>;

/** What `useApp` started; read its fields inside tests and hooks (they are set by its beforeAll). */
export interface TestApp {
  readonly database: TestDatabase;
  readonly kafka: TestKafka;
  readonly harness: Harness;
  readonly producer: Producer;
  readonly receiver: TestReceiver;
  readonly relay: Relay;
  readonly router: OpsRouter;
  /** The ops server's address, e.g. `http://127.0.0.1:40123` (its API is `${base}/ops/api`). */
  readonly base: string;
  readonly browser: Browser;
  /** The PMSs' callback endpoint, with what it received. */
  readonly callbackEndpoint: CallbackEndpoint;
  readonly callbacks: Callbacks;
  readonly deadLetterIndexer: DeadLetterIndexer;
  /** Starts a new relay with the same options in place of the one stopped (`relay.stop()`). */
  restartRelay(): Promise<void>;
}

/** A relay on a test's database and topics (retention 72 h, silent), `overrides` over that. */
export function testRelay(
  database: Pick<TestDatabase, 'db' | 'url'>,
  kafka: Pick<TestKafka, 'kafka' | 'prefix'>,
  overrides: Partial<RelayOptions> = {},
): Relay {
  return createRelay({
    db: database.db,
    kafka: kafka.kafka,
    logger: createLogger({ level: 'silent' }),
    databaseUrl: database.url,
    topicPrefix: kafka.prefix,
    retentionHours: 72,
    ...overrides,
  });
}

/** Publishes what the outbox holds with a relay of its own, then stops that relay. */
export async function drainOutbox(
  database: Pick<TestDatabase, 'db' | 'url'>,
  kafka: Pick<TestKafka, 'kafka' | 'prefix'>,
): Promise<void> {
  const relay = testRelay(database, kafka);
  try {
    await relay.drain();
  } finally {
    await relay.stop();
  }
}

/**
 * The consumers' harness (test/consumers/support/harness.ts) with `consumers` started, as hooks of
 * the calling `describe`: use it inside tests and hooks as the harness itself.
 */
export function useHarness(
  consumers: AppOptions['consumers'],
  consumerOverrides?: AppOptions['consumerOverrides'],
): Harness {
  const app = useApp({ harness: true, consumers, ...(consumerOverrides && { consumerOverrides }) });
  return new Proxy({} as Harness, {
    get: (_target, field) => app.harness[field as keyof Harness],
  });
}

/**
 * One set-up of the app on the real PostgreSQL and Kafka, registered as hooks of the calling
 * `describe`: what `options` asks for is started in its beforeAll (in the order of the flow) and
 * stopped in its afterAll (in reverse). The test file's own hooks, registered after, run inside.
 */
export function useApp(options: AppOptions): TestApp {
  const state: Partial<Record<keyof TestApp, unknown>> & { server?: Server } = {};
  const silent = createLogger({ level: 'silent' });
  const newRelay = (): Relay => {
    const { start: _start, ...overrides } = options.relay ?? {};
    return testRelay(state.database as TestDatabase, state.kafka as TestKafka, overrides);
  };

  beforeAll(async () => {
    if (options.harness) {
      const h = await createHarness();
      state.harness = h;
      for (const type of options.consumers ?? []) await h.startConsumer(type, options.consumerOverrides);
      Object.assign(state, { harness: h, database: h.database, kafka: h.kafka, producer: h.producer });
    } else {
      state.database = await createTestDatabase();
      if (options.topics) {
        const kafka = createTestKafka();
        state.kafka = kafka;
        const topics = options.topics === 'all' ? undefined : options.topics;
        await retry(() => kafka.createTopics(topics));
        if (options.producer) {
          const producer = kafka.kafka.producer();
          await producer.connect();
          state.producer = producer;
        }
      }
    }
    const database = state.database as TestDatabase;
    if (options.receiver) {
      state.receiver = await startReceiver({
        db: database.db,
        databaseUrl: database.url,
        ...options.receiver,
      });
    }
    if (options.relay) {
      const relay = newRelay();
      state.relay = relay;
      if (options.relay.start !== false) await relay.start();
    }
    if (options.ops) {
      const { app: kind, topicPrefix, ...rest } = options.ops;
      const router = createOpsRouter({
        db: database.db,
        logger: silent,
        topicPrefix: topicPrefix ?? (state.kafka as TestKafka).prefix,
        ...(state.producer ? { producer: state.producer as Producer } : {}),
        ...rest,
      });
      state.router = router;
      let app: express.Express;
      if (kind === 'express') {
        app = express();
        app.use(requestId());
        app.use('/ops', router);
      } else {
        app = createHttpApp({ logger: silent, mounts: [{ path: '/ops', router }] });
      }
      const server = await new Promise<Server>((resolve) => {
        const s = app.listen(0, '127.0.0.1', () => resolve(s));
      });
      state.server = server;
      state.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }
    if (options.deadLetterIndexer) {
      const kafka = state.kafka as TestKafka;
      const indexer = createDeadLetterIndexer({
        db: database.db,
        kafka: kafka.kafka,
        logger: harnessLogger,
        topicPrefix: kafka.prefix,
      });
      state.deadLetterIndexer = indexer;
      await indexer.start();
    }
    if (options.callbacks) await startCallbacks(options.callbacks);
    if (options.browser) state.browser = await launchChromium();
  });

  async function startCallbacks({ secrets, behaviours = {} }: NonNullable<AppOptions['callbacks']>) {
    const answers = Object.fromEntries(
      Object.keys(secrets).map((source) => [source, behaviours[source] ?? (() => ({ status: 200 }))]),
    );
    const endpoint = await startCallbackEndpoint(answers, secrets);
    state.callbackEndpoint = endpoint;
    const database = state.database as TestDatabase;
    const kafka = state.kafka as TestKafka;
    const pmsCallbacks = Object.fromEntries(
      Object.entries(secrets).map(([source, list]) => [source, { url: endpoint.url(source), secrets: list }]),
    );
    const config = loadConfig({
      DATABASE_URL: database.url,
      KAFKA_TOPIC_PREFIX: kafka.prefix,
      PMS_CALLBACKS: JSON.stringify(pmsCallbacks),
      CALLBACK_POLL_MS: '100',
    });
    const callbacks = createCallbacks({ db: database.db, kafka: kafka.kafka, logger: harnessLogger, config });
    state.callbacks = callbacks;
    await callbacks.start();
  }

  afterAll(async () => {
    await (state.browser as Browser | undefined)?.close();
    await (state.callbacks as Callbacks | undefined)?.stop();
    await (state.callbackEndpoint as CallbackEndpoint | undefined)?.close();
    await (state.deadLetterIndexer as DeadLetterIndexer | undefined)?.stop();
    const server = state.server;
    server?.closeAllConnections();
    if (server) await new Promise((r) => server.close(r));
    await (state.router as OpsRouter | undefined)?.close();
    await (state.relay as Relay | undefined)?.stop();
    await (state.receiver as TestReceiver | undefined)?.close();
    if (options.harness) {
      await (state.harness as Harness | undefined)?.close();
      return;
    }
    await (state.producer as Producer | undefined)?.disconnect();
    await (state.kafka as TestKafka | undefined)?.close();
    await (state.database as TestDatabase | undefined)?.drop();
  });

  const field = <K extends keyof TestApp>(name: K) => ({
    get: () => {
      if (state[name] === undefined)
        throw new Error(`useApp: no ${name} (not asked for, or not started yet)`);
      return state[name];
    },
  });
  const app = {
    async restartRelay() {
      const relay = newRelay();
      state.relay = relay;
      await relay.start();
    },
  } as TestApp;
  for (const name of [
    'database',
    'kafka',
    'harness',
    'producer',
    'receiver',
    'relay',
    'router',
    'base',
    'browser',
    'callbackEndpoint',
    'callbacks',
    'deadLetterIndexer',
  ] as const) {
    Object.defineProperty(app, name, { ...field(name), enumerable: true });
  }
  return app;
}
