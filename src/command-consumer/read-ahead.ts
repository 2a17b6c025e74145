import type { Consumer, EachBatchPayload, KafkaMessage } from 'kafkajs';
import type { Logger } from '../logger.js';
import { createKeyOrder, type Held, type Ordering } from './key-order.js';

/**
 * The command consumer's loop (decision 054): it reads ahead of the commands it applies, up to
 * `maxHeld` messages per process, runs up to `concurrency` of them at once, one at a time per
 * target record and in arrival order (src/command-consumer/key-order.ts decides which), and
 * commits each partition's offset up to its oldest command not yet final, as soon as a command
 * ends. So a slow record holds its own later commands and its partition's committed offset, never
 * the other records' commands; a crash or a rebalance re-reads from the oldest unfinished command,
 * and the guard finds those already final and writes nothing again.
 */

export interface ReadAheadOptions {
  consumer: Consumer;
  topic: string;
  logger: Logger;
  /**
   * The record a message is about (one record's messages run one at a time, in arrival order), its
   * source (sources share the running slots) and when it was taken in (the oldest goes first).
   */
  orderOf(message: KafkaMessage, partition: number): Ordering;
  /**
   * Applies one message; resolves once what it publishes is on Kafka. Throws: a bug, or a stop.
   * Calls `release` once its write is final and only its result is still to go to Kafka: the
   * record's next command may start meanwhile (the offset still waits for the end).
   */
  run(partition: number, message: KafkaMessage, release: () => void): Promise<void>;
  /** Messages held (waiting and running); past it the partitions read pause. */
  maxHeld: number;
  /** Messages applied at once. */
  concurrency: number;
  /** Aborted on stop: a running command is left as it is (its row keeps its state). */
  signal: AbortSignal;
  /** A command failed with an error that is not retried (a bug): the consumer must stop. */
  onBug(error: unknown): void;
}

export interface ReadAhead {
  eachBatch(payload: EachBatchPayload): Promise<void>;
  /** A (re)join: kafkajs reads every assigned partition again from its committed offset. */
  joined(): void;
  /** The 429 gate: while closed, no partition is fetched. */
  throttled(closed: boolean): void;
  /** Commits what is safe, then takes no more work and commits nothing more. */
  close(): Promise<void>;
  /** For metrics and tests: messages waiting and running. */
  counts(): { waiting: number; running: number };
}

export function createReadAhead(options: ReadAheadOptions): ReadAhead {
  const { consumer, topic, logger } = options;
  const order = createKeyOrder<KafkaMessage>();
  /** Partitions paused because the buffer was full (the gate pauses the whole topic on its own). */
  const pausedForRoom = new Set<number>();
  let gateClosed = false;
  let closed = false;
  let committing: Promise<void> | null = null;
  let commitAgain = false;
  let retryTimer: NodeJS.Timeout | null = null;

  async function commitOnce(): Promise<void> {
    const offsets = order
      .partitions()
      .map((partition) => ({ partition, offset: order.commitFor(partition) }))
      .filter((o): o is { partition: number; offset: bigint } => o.offset !== undefined);
    if (offsets.length === 0 || closed) return;
    try {
      await consumer.commitOffsets(
        offsets.map(({ partition, offset }) => ({ topic, partition, offset: offset.toString() })),
      );
    } catch (error) {
      // A rebalance or a broker away: the offsets are still safe to commit later, and a re-read
      // of what they cover is harmless (the guard). Tried again shortly, and on the next end.
      for (const { partition } of offsets) order.commitFailed(partition);
      logger.warn({ err: error }, 'offsets not committed: trying again');
      retryTimer ??= setTimeout(() => ((retryTimer = null), void commit()), 1000).unref();
    }
  }

  /** One commit at a time; ends meanwhile are taken by the next one. */
  function commit(): Promise<void> {
    if (committing) {
      commitAgain = true;
      return committing;
    }
    committing = (async () => {
      do {
        commitAgain = false;
        await commitOnce();
      } while (commitAgain && !closed);
    })().finally(() => (committing = null));
    return committing;
  }

  function resumeIfRoom() {
    if (pausedForRoom.size === 0 || order.held() > options.maxHeld / 2) return;
    const partitions = [...pausedForRoom];
    pausedForRoom.clear();
    if (!gateClosed && !closed) consumer.resume([{ topic, partitions }]);
  }

  function launch(held: Held<KafkaMessage>) {
    // Released at most once, and never after its end.
    let running = true;
    const release = () => {
      if (!running) return;
      running = false;
      order.release(held);
      pump();
    };
    options.run(held.partition, held.item, release).then(
      () => {
        running = false;
        order.finish(held);
        void commit();
        resumeIfRoom();
        pump();
      },
      (error: unknown) => {
        running = false;
        // Not final: nothing may commit past it. Its partition is given up here (its waiting
        // messages dropped); the next start reads it again from the committed offset.
        order.revoke(held.partition);
        order.finish(held);
        if (options.signal.aborted || closed) return;
        closed = true;
        options.onBug(error);
      },
    );
  }

  function pump() {
    while (!closed && order.running() < options.concurrency) {
      const held = order.start();
      if (!held) return;
      launch(held);
    }
  }

  return {
    async eachBatch({ batch, resolveOffset, isRunning, isStale }) {
      const { partition } = batch;
      for (const message of batch.messages) {
        if (closed || !isRunning() || isStale()) return;
        if (order.held() >= options.maxHeld) {
          // Left unresolved: kafkajs fetches the rest again from here once resumed.
          pausedForRoom.add(partition);
          consumer.pause([{ topic, partitions: [partition] }]);
          return;
        }
        order.add(partition, BigInt(message.offset), options.orderOf(message, partition), message);
        resolveOffset(message.offset);
        pump();
      }
    },
    joined() {
      // The new assignment is read from the committed offsets: what waits here would be read twice.
      for (const partition of order.partitions()) order.revoke(partition);
      resumeIfRoom();
    },
    throttled(closedNow) {
      gateClosed = closedNow;
      if (closed) return;
      if (closedNow) return consumer.pause([{ topic }]);
      consumer.resume([{ topic }]);
      if (pausedForRoom.size > 0) consumer.pause([{ topic, partitions: [...pausedForRoom] }]);
    },
    async close() {
      if (retryTimer) clearTimeout(retryTimer);
      await commit();
      closed = true;
    },
    counts() {
      return { waiting: order.waiting(), running: order.running() };
    },
  };
}
