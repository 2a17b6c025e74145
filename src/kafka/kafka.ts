import {
  Kafka,
  logLevel,
  type Admin,
  type AdminConfig,
  type Consumer,
  type ConsumerConfig,
  type LogEntry,
  type Producer,
  type ProducerConfig,
} from 'kafkajs';
import type { Logger } from '../logger.js';
import { kafkaLogMethod } from './kafka-log-level.js';
import {
  ADMIN_SETTINGS,
  CLIENT_SETTINGS,
  consumerSettings,
  PRODUCER_SETTINGS,
} from './kafka-client-settings.js';

/**
 * A kafkajs client whose producers, consumers and admins all get rentbridge's failover settings
 * (src/kafka/kafka-client-settings.ts, decision 056) under what their caller names: a consumer
 * written tomorrow holds them without knowing of them.
 */
class SettledKafka extends Kafka {
  constructor(
    config: ConstructorParameters<typeof Kafka>[0],
    private readonly sessionTimeoutMs: number | undefined,
  ) {
    super(config);
  }
  override producer(config: ProducerConfig = {}): Producer {
    return super.producer({ ...PRODUCER_SETTINGS, ...config });
  }
  override consumer(config: ConsumerConfig): Consumer {
    return super.consumer({ ...consumerSettings(this.sessionTimeoutMs), ...config });
  }
  override admin(config: AdminConfig = {}): Admin {
    return super.admin({ ...ADMIN_SETTINGS, ...config });
  }
}

/** A kafkajs client whose own logs go through pino. */
export function createKafka(options: {
  brokers: string[];
  clientId: string;
  logger: Logger;
  /** Every consumer's session time-out (KAFKA_SESSION_TIMEOUT_MS); default 6 s. */
  sessionTimeoutMs?: number;
}): Kafka {
  const log = options.logger.child({ component: 'kafkajs' });
  return new SettledKafka(
    {
      clientId: options.clientId,
      brokers: options.brokers,
      ...CLIENT_SETTINGS,
      logLevel: logLevel.WARN,
      logCreator:
        () =>
        ({ level, log: entry }: LogEntry) => {
          const { message, ...fields } = entry;
          log[kafkaLogMethod(level, message, fields)](fields, message);
        },
    },
    options.sessionTimeoutMs,
  );
}
