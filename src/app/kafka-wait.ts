import { backoffDelay, type BackoffPolicy } from '../backoff.js';
import type { Logger } from '../logger.js';
import type { Component } from './lifecycle.js';

/** After failure n: 1 s doubled, up to 30 s, spread by ±20 %. */
const WAIT_FOR_KAFKA: BackoffPolicy = {
  initialRetryTime: 1000,
  maxRetryTime: 30_000,
  factor: 0.2,
  maxGrowths: 10,
};

/**
 * A role that needs Kafka from its start (a command consumer, the dead-letter indexer). Started
 * while no broker answers, it does not exit: `start()` returns at once and the role waits for the
 * brokers in the background, trying `before` (topic creation) and its own start again with
 * back-off (1 s doubled, up to 30 s), with a warning each time, and begins its work once they
 * answer. Meanwhile the process serves /healthz, and /readyz says not ready (the role is not in
 * its consumer group, and Kafka does not answer). `stop()` ends the wait.
 */
export function startWhenKafkaAnswers(
  component: Component,
  options: { logger: Logger; before?: () => Promise<void>; backoff?: BackoffPolicy },
): Component & { waiting(): boolean } {
  const policy = options.backoff ?? WAIT_FOR_KAFKA;
  let stopped = false;
  let waiting = false;
  let attempt: Promise<void> | null = null;
  let wake: (() => void) | null = null;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = null;
        resolve();
      }
      wake = done;
    });

  async function keepTrying(): Promise<void> {
    for (let failure = 1; !stopped; failure++) {
      try {
        await options.before?.();
        if (stopped) return;
        await component.start();
        if (failure > 1) options.logger.info({ component: component.name }, 'Kafka answers: role started');
        waiting = false;
        return;
      } catch (error) {
        if (stopped) return;
        waiting = true;
        const retryInMs = Math.round(backoffDelay(policy, failure));
        options.logger.warn(
          { err: error, component: component.name, attempt: failure, retryInMs },
          'Kafka does not answer: the role waits and tries again (not ready meanwhile)',
        );
        await pause(retryInMs);
      }
    }
  }

  return {
    name: component.name,
    waiting: () => waiting,
    async start() {
      stopped = false;
      attempt = keepTrying();
    },
    async stop() {
      stopped = true;
      wake?.();
      // A start held in kafkajs's own connection retries must not hold the shutdown.
      await Promise.race([attempt, new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
      await component.stop();
    },
  };
}
