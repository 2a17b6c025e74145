import { Kafka, logLevel, type LogEntry } from 'kafkajs';
import type { Logger } from '../logger.js';
import { kafkaLogMethod } from './kafka-log-level.js';

/** A kafkajs client whose own logs go through pino. */
export function createKafka(options: { brokers: string[]; clientId: string; logger: Logger }): Kafka {
  const log = options.logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: options.clientId,
    brokers: options.brokers,
    logLevel: logLevel.WARN,
    retry: { initialRetryTime: 300, retries: 8 },
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...fields } = entry;
        log[kafkaLogMethod(level, message, fields)](fields, message);
      },
  });
}
