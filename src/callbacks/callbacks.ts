import type { Kafka } from 'kafkajs';
import type { Config } from '../config/config.js';
import type { Db } from '../db/prisma.js';
import type { ConsumerHealth } from '../kafka/consumer-health.js';
import type { Logger } from '../logger.js';
import { createCallbackDeliverer, type CallbackDeliverer } from './callback-deliverer.js';
import { createCallbackIntake } from './callback-intake.js';
import { exposeCallbackMetrics } from './callback-metrics.js';
import type { sendCallback } from './callback-sender.js';

/**
 * Outcome callbacks (docs/decisions/029-outcome-callbacks.md): the intake (outcomes.* → one
 * delivery row per outcome of a source with PMS_CALLBACKS) and the per-source delivery loops,
 * started and stopped together as one role, `callbacks`.
 */
export interface Callbacks {
  readonly name: 'callbacks';
  readonly groupId: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** For /readyz: the intake in its group, every source's loop running. */
  health(): ConsumerHealth;
  breakers(): ReturnType<CallbackDeliverer['breakers']>;
}

export interface CallbacksDeps {
  db: Db;
  kafka: Kafka;
  logger: Logger;
  config: Pick<
    Config,
    | 'KAFKA_TOPIC_PREFIX'
    | 'PMS_CALLBACKS'
    | 'CALLBACK_TIMEOUT_MS'
    | 'CALLBACK_RETRY_INITIAL_MS'
    | 'CALLBACK_RETRY_MAX_DELAY_MS'
    | 'CALLBACK_RETRY_SPAN_MS'
    | 'CALLBACK_BREAKER_FAILURES'
    | 'CALLBACK_BREAKER_COOLDOWN_MS'
    | 'CALLBACK_CONCURRENCY'
    | 'CALLBACK_MAX_CONCURRENCY'
    | 'CALLBACK_POLL_MS'
  >;
  /** Consumer group of the intake; default `<prefix>rentbridge.callbacks`. */
  groupId?: string;
  send?: typeof sendCallback;
}

export function createCallbacks(deps: CallbacksDeps): Callbacks {
  const { config } = deps;
  const sources = Object.keys(config.PMS_CALLBACKS);
  exposeCallbackMetrics(sources);
  const deliverer = createCallbackDeliverer({
    db: deps.db,
    logger: deps.logger,
    endpoints: config.PMS_CALLBACKS,
    timeoutMs: config.CALLBACK_TIMEOUT_MS,
    schedule: {
      initialMs: config.CALLBACK_RETRY_INITIAL_MS,
      maxDelayMs: config.CALLBACK_RETRY_MAX_DELAY_MS,
      spanMs: config.CALLBACK_RETRY_SPAN_MS,
    },
    breaker: {
      failureThreshold: config.CALLBACK_BREAKER_FAILURES,
      cooldownMs: config.CALLBACK_BREAKER_COOLDOWN_MS,
      maxCooldownMs: config.CALLBACK_RETRY_MAX_DELAY_MS,
    },
    concurrency: config.CALLBACK_CONCURRENCY,
    maxConcurrency: config.CALLBACK_MAX_CONCURRENCY,
    pollMs: config.CALLBACK_POLL_MS,
    ...(deps.send && { send: deps.send }),
  });
  const intake = createCallbackIntake({
    db: deps.db,
    kafka: deps.kafka,
    logger: deps.logger,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    sources,
    maxAgeMs: config.CALLBACK_RETRY_SPAN_MS,
    onNew: (s) => deliverer.wake(s),
    ...(deps.groupId && { groupId: deps.groupId }),
  });
  return {
    name: 'callbacks',
    groupId: intake.groupId,
    async start() {
      // The loops first: deliveries left pending by a previous run go out while the intake joins.
      await deliverer.start();
      try {
        await intake.start();
      } catch (error) {
        // Not started: nothing of it may keep running (the loops hold timers and connections).
        await intake.stop().catch(() => undefined);
        await deliverer.stop();
        throw error;
      }
    },
    async stop() {
      await intake.stop();
      await deliverer.stop();
    },
    health() {
      const consumer = intake.health();
      return {
        check: () => {
          const loops = deliverer.check();
          return loops === true ? consumer.check() : loops;
        },
        details: (admin) => consumer.details(admin),
      };
    },
    breakers: () => deliverer.breakers(),
  };
}
