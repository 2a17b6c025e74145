import type { Consumer, TopicPartitionOffsetAndMetadata } from 'kafkajs';
import type { Logger } from '../logger.js';

/**
 * Commits the offsets of messages whose rows are stored already, and stored idempotently (a re-read
 * inserts nothing twice). A refused commit (the group's coordinator moving to another broker after
 * a broker was lost, a rebalance) is logged, not thrown: the next batch's commit covers its offsets,
 * and a re-read after a restart is harmless. Thrown, it failed the batch, and kafkajs rejoined the
 * group on NOT_COORDINATOR: its fetches stopped until the new coordinator had loaded the group
 * (decision 056). A rebalance is still seen at the batch's heartbeat.
 */
export async function commitStored(
  consumer: Consumer,
  offsets: TopicPartitionOffsetAndMetadata[],
  log: Logger,
): Promise<void> {
  await consumer
    .commitOffsets(offsets)
    .catch((error: unknown) =>
      log.warn({ err: error }, 'offsets not committed: the next batch commits them'),
    );
}
