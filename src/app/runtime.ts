import type { Admin, Kafka } from 'kafkajs';
import type { Config } from '../config/config.js';
import { createDb, type Db } from '../db/prisma.js';
import { createKafka } from '../kafka/kafka.js';
import { pendingChanges, readTopicPlan } from '../kafka/topic-plan.js';
import { ensureTopics } from '../kafka/topics.js';
import { topicSettingsFromConfig } from '../kafka/topic-settings.js';
import { createLogger, type Logger } from '../logger.js';
import { resolveLogFormat } from '../log-format.js';

/**
 * The composition root's shared parts: config, the root logger, Prisma and Kafka. Built once per
 * process; each role (receiver, relay, poller, consumers) takes what it needs from here.
 */
export interface Runtime {
  config: Config;
  logger: Logger;
  /** Created on first use: the sandbox and `--help` need no database. */
  readonly db: Db;
  readonly kafka: Kafka;
  /** Creates the topics rentbridge uses (never the broker's auto-creation). */
  ensureTopics(): Promise<void>;
  close(): Promise<void>;
}

export function createRuntime(
  config: Config,
  logger = createLogger({ level: config.LOG_LEVEL, format: resolveLogFormat(config.LOG_FORMAT) }),
): Runtime {
  let db: Db | undefined;
  let kafka: Kafka | undefined;
  return {
    config,
    logger,
    get db() {
      db ??= createDb(config.DATABASE_URL);
      return db;
    },
    get kafka() {
      kafka ??= createKafka({
        brokers: config.KAFKA_BROKERS,
        clientId: config.KAFKA_CLIENT_ID,
        logger,
        sessionTimeoutMs: config.KAFKA_SESSION_TIMEOUT_MS,
      });
      return kafka;
    },
    async ensureTopics() {
      const admin = this.kafka.admin();
      await admin.connect();
      try {
        const created = await ensureTopics(admin, {
          prefix: config.KAFKA_TOPIC_PREFIX,
          settings: topicSettingsFromConfig(config),
          // Returns once every broker knows the new topics: no UNKNOWN_TOPIC_OR_PARTITION at start.
          kafkaFor: (broker) => createKafka({ brokers: [broker], clientId: config.KAFKA_CLIENT_ID, logger }),
        });
        if (created.length > 0) logger.info({ component: 'topics', created }, 'topics created');
        await warnOfDifferingTopics(admin, config, logger);
      } finally {
        await admin.disconnect();
      }
    },
    async close() {
      await db?.$disconnect();
    },
  };
}

/**
 * Existing topics are never altered at start (decision 024): when some differ from the wanted
 * settings (a deployment from before changelogs, a changed KAFKA_* setting), says so and how to
 * see and apply the change. A failure to read them is not the start's business: debug only.
 */
async function warnOfDifferingTopics(admin: Admin, config: Config, logger: Logger): Promise<void> {
  try {
    const plan = await readTopicPlan(admin, {
      prefix: config.KAFKA_TOPIC_PREFIX,
      settings: topicSettingsFromConfig(config),
    });
    const differing = pendingChanges(plan).map((t) => t.topic);
    if (differing.length > 0) {
      logger.warn(
        { component: 'topics', differing },
        'some topics differ from the wanted settings: `rentbridge topics` shows how, `rentbridge topics --apply` alters them in place',
      );
    }
  } catch (error) {
    logger.debug({ component: 'topics', err: error }, 'topic settings not compared');
  }
}
