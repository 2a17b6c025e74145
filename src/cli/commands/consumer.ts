import {
  COMMAND_CONSUMER_NAMES,
  createCompositionRoot,
  runRoles,
  type CommandConsumerName,
  type CompositionRoot,
} from '../../app/composition-root.js';
import type { Component } from '../../app/lifecycle.js';
import { requireProbeAssumptions } from '../../partner-probe/probe-gate.js';
import { startWhenKafkaAnswers } from '../../app/kafka-wait.js';
import { loadConfigOrExit, UsageError } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

export const CONSUMERS = [...COMMAND_CONSUMER_NAMES, 'dead-letters'] as const;

function isCommandConsumer(name: string): name is CommandConsumerName {
  return (COMMAND_CONSUMER_NAMES as string[]).includes(name);
}

/**
 * `rentbridge consumer <name>`: one command consumer (application-decisions, rental-payments,
 * customer-registrations, enrollments) or the dead-letter indexer (dead-letters), until
 * SIGTERM / SIGINT; /metrics and health on HTTP_PORT.
 */
export async function consumer(name: string): Promise<void> {
  if (name !== 'dead-letters' && !isCommandConsumer(name)) {
    throw new UsageError(`unknown consumer "${name}": expected one of ${CONSUMERS.join(', ')}`);
  }
  const root = createCompositionRoot(loadConfigOrExit());
  if (name === 'dead-letters') {
    // Indexes every `*.dlq` topic into PostgreSQL for ops.
    await requireMigrated(root.config.DATABASE_URL, root.logger);
    const indexer = root.deadLetterIndexer();
    await runRoles(root, () => [root.probes(), waitingForKafka(root, indexer)]);
    return;
  }
  requireProbeAssumptions(root.config, root.logger);
  await requireMigrated(root.config.DATABASE_URL, root.logger);
  // Built before the signal handlers: no PARTNER_API_URL is a usage error (exit 2) at once.
  const role = root.commandConsumer(name);
  await runRoles(root, () => [root.probes(), waitingForKafka(root, role)]);
}

/**
 * Started (or restarted) while the brokers are away, a consumer waits for them with back-off
 * instead of exiting, its /readyz not ready meanwhile; the topics are made once they answer.
 */
function waitingForKafka(root: CompositionRoot, component: Component): Component {
  return startWhenKafkaAnswers(component, { logger: root.logger, before: () => root.ensureTopics() });
}
