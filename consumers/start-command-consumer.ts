import type { GuardOptions } from '../src/guard/index.js';
import { createPartnerForRole } from '../src/roles/partner-role.js';
import { loadConfigOrExit, runUntilSignal, UsageError } from '../src/cli/process.js';
import { createRuntime, type Runtime } from '../src/runtime.js';
import { createApplicationDecisionsConsumer } from './application-decisions.js';
import type { CommandConsumer } from './command-consumer.js';
import { createCustomerRegistrationsConsumer } from './customer-registrations.js';
import { createEnrollmentsConsumer } from './enrollments.js';
import { createRentalPaymentsConsumer } from './rental-payments.js';
import { requireMigrated } from '../src/cli/require-migrated.js';
import { requireProbeAssumptions } from '../src/probe/probe-gate.js';

export const COMMAND_CONSUMERS = {
  'application-decisions': createApplicationDecisionsConsumer,
  'rental-payments': createRentalPaymentsConsumer,
  'customer-registrations': createCustomerRegistrationsConsumer,
  enrollments: createEnrollmentsConsumer,
} as const;
export type CommandConsumerName = keyof typeof COMMAND_CONSUMERS;

/**
 * Builds and starts one command consumer from the runtime: the Partner API client paced by the
 * budget shared (through PostgreSQL) with every other process on the egress IP.
 */
export async function startCommandConsumer(
  runtime: Runtime,
  name: CommandConsumerName,
  options: { partnerUrl: string; guard?: GuardOptions },
): Promise<CommandConsumer> {
  const { config, logger, db } = runtime;
  await runtime.ensureTopics();
  const { partner, budget } = createPartnerForRole(runtime, { baseUrl: options.partnerUrl });
  const consumer = COMMAND_CONSUMERS[name]({
    kafka: runtime.kafka,
    db,
    databaseUrl: config.DATABASE_URL,
    partner,
    budget,
    logger,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    partitionsConsumedConcurrently: config.KAFKA_TOPIC_PARTITIONS,
    sessionTimeoutMs: config.KAFKA_SESSION_TIMEOUT_MS,
    // The guard's processing bound comes from the configured assumption (PARTNER_MAX_PROCESSING_MS).
    guard: { maxProcessingMs: config.PARTNER_MAX_PROCESSING_MS, ...options.guard },
  });
  await consumer.start();
  return {
    groupId: consumer.groupId,
    start: () => consumer.start(),
    async stop() {
      await consumer.stop();
      await budget.close?.();
    },
  };
}

/** `rentbridge consumer application-decisions|rental-payments`: runs until SIGTERM / SIGINT. */
export async function runCommandConsumer(name: CommandConsumerName): Promise<void> {
  const runtime = createRuntime(loadConfigOrExit());
  requireProbeAssumptions(runtime.config, runtime.logger);
  await requireMigrated(runtime.config.DATABASE_URL, runtime.logger);
  const partnerUrl = runtime.config.PARTNER_API_URL;
  if (!partnerUrl) {
    throw new UsageError(
      'PARTNER_API_URL is not set: point it at the Partner API (or use `rentbridge start`, which runs the embedded sandbox)',
    );
  }
  await runUntilSignal(runtime.logger, async () => {
    const consumer = await startCommandConsumer(runtime, name, { partnerUrl });
    return {
      async stop() {
        await consumer.stop();
        await runtime.close();
      },
    };
  });
}
