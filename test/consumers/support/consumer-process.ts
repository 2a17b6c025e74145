/**
 * A command consumer in its own process, so a test can SIGKILL it mid-write. Configured by
 * environment: DATABASE_URL, KAFKA_BROKERS, KAFKA_TOPIC_PREFIX, PARTNER_API_URL, GROUP_ID, and
 * COMMAND_TYPE (a command type's name; default application-decisions).
 * Prints `ready` once the consumer has started.
 */
import { Kafka, logLevel } from 'kafkajs';
import { commandTypeByName } from '../../../src/command-types/command-types.js';
import { createCommandConsumer } from '../../../src/command-consumer/command-consumer.js';
import { createDb } from '../../../src/db/prisma.js';
import { createLogger } from '../../../src/logger.js';
import { createPartnerClient } from '../../../src/partner/index.js';

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const logger = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const type = commandTypeByName(process.env.COMMAND_TYPE ?? 'application-decisions');
if (!type) throw new Error(`no command type ${process.env.COMMAND_TYPE}`);
const consumer = createCommandConsumer(type, {
  kafka: new Kafka({
    clientId: 'consumer-process',
    brokers: env('KAFKA_BROKERS').split(','),
    logLevel: logLevel.NOTHING,
  }),
  db: createDb(env('DATABASE_URL'), { max: 2 }),
  databaseUrl: env('DATABASE_URL'),
  partner: createPartnerClient({
    baseUrl: env('PARTNER_API_URL'),
    accessKey: 'sandbox-access-key',
    secretKey: 'sandbox-secret-key',
    timeoutMs: 20_000,
    logger,
  }),
  logger,
  topicPrefix: env('KAFKA_TOPIC_PREFIX'),
  groupId: env('GROUP_ID'),
  sessionTimeoutMs: 6000,
});
await consumer.start();
console.log('ready');
