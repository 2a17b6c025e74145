import { afterAll, afterEach, beforeAll } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createRelay, type Relay, type RelayOptions } from '../../src/relay/relay.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { retry, startReceiver, type TestReceiver } from '../receiver/webhooks.js';

export interface RelayFixture {
  readonly database: TestDatabase;
  readonly kafka: TestKafka;
  readonly receiver: TestReceiver;
  /** A relay on the fixture's database and broker (fast sweep and back-off), stopped after each test. */
  relay(overrides?: Partial<RelayOptions>): Relay;
}

/**
 * The relay tests' set-up, registered as hooks of the calling `describe`: a database, the given
 * topics on the real broker, a receiver taking `acme`'s signed webhooks, and relays stopped after
 * every test.
 */
export function useRelayFixture(options: {
  topics: string[];
  acmeSecret: string;
  maxBodyBytes?: number;
}): RelayFixture {
  let database: TestDatabase;
  let kafka: TestKafka;
  let receiver: TestReceiver;
  const relays: Relay[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    kafka = createTestKafka();
    await retry(() => kafka.createTopics(options.topics));
    receiver = await startReceiver({
      db: database.db,
      databaseUrl: database.url,
      partnerSecrets: [],
      pmsSecrets: { acme: [options.acmeSecret] },
      ...(options.maxBodyBytes !== undefined && { maxBodyBytes: options.maxBodyBytes }),
    });
  });
  afterEach(async () => {
    await Promise.all(relays.splice(0).map((r) => r.stop()));
  });
  afterAll(async () => {
    await receiver?.close();
    await kafka?.close();
    await database?.drop();
  });

  return {
    get database() {
      return database;
    },
    get kafka() {
      return kafka;
    },
    get receiver() {
      return receiver;
    },
    relay(overrides = {}) {
      const r = createRelay({
        db: database.db,
        kafka: kafka.kafka,
        logger: createLogger({ level: process.env.RELAY_LOG ?? 'silent' }),
        databaseUrl: database.url,
        topicPrefix: kafka.prefix,
        retentionHours: 72,
        sweepMs: 200,
        maxBackoffMs: 500,
        ...overrides,
      });
      relays.push(r);
      return r;
    },
  };
}
