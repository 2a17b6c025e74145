/**
 * The command consumer's scheduling core (decision 054), pure: no Kafka, no clock, no I/O, so a
 * property test can walk any interleaving of arrivals, starts, finishes and revocations through it
 * (test/command-consumer/key-order.property.test.ts).
 *
 * It holds the messages read ahead of the ones being applied and answers three questions:
 * - which held message may start now: one whose key (the target record) has nothing running, so
 *   one record's commands run one at a time in arrival order while other records' commands
 *   overtake them (a command whose write is final and whose result is on its way to Kafka is
 *   released: it no longer runs for this, issue 53); of those, the oldest by the time the command
 *   was taken in, not by when its partition was read (after an outage a whole partition's backlog
 *   may be read after another's, and its records must not wait for the other's to drain, issue 53),
 *   of the source (the PMS) with the fewest running, so a source's burst read ahead never keeps
 *   another source's commands from the Partner API's budget, where the budget's own share by
 *   source decides (issue 52);
 * - what offset of a partition may be committed: its oldest message not yet final (everything
 *   before it is final), or one past its newest when all are; never past an unfinished one;
 * - how much is held, for the bound on reading ahead.
 *
 * A revoked partition (a rebalance, a stop) drops its messages not yet started: the next owner
 * reads them again from the committed offset. Its running ones keep their key busy until they are
 * released or end, so a message read again for the same record in this process still waits for
 * them, but their end no longer moves any offset: the partition's offsets belong to its next
 * assignment.
 */

/** What the order needs to know of a message. */
export interface Ordering {
  /** The record the message is about: its messages run one at a time, in arrival order. */
  readonly key: string;
  /** The source (PMS) the message comes from: sources share the running slots. */
  readonly source: string;
  /** When the command was taken in (ms): of the records free to start, the oldest goes first. */
  readonly at: number;
}

export interface Held<T> extends Ordering {
  readonly partition: number;
  readonly offset: bigint;
  readonly item: T;
}

interface Slot<T> extends Held<T> {
  /** The partition's log this slot belongs to: replaced on revoke, so an old slot's end moves nothing. */
  readonly log: PartitionLog<T>;
  state: 'queued' | 'running' | 'released' | 'final';
}

interface PartitionLog<T> {
  /** This partition's slots in offset order, from the oldest not yet committed. */
  slots: Slot<T>[];
  /** The next offset expected: a message below it was read already (a refetch) and is skipped. */
  next: bigint | null;
  /** The offset last handed out to commit. */
  committed: bigint | null;
}

export interface KeyOrder<T> {
  /**
   * Takes a message read from `partition`. Answers false for one it already holds or held (an
   * offset below the partition's next expected one): read twice by a fetch, it is not run twice.
   */
  add(partition: number, offset: bigint, ordering: Ordering, item: T): boolean;
  /**
   * A held message whose key has nothing running (its key's first in arrival order), marked
   * running: of the source with the fewest running, the oldest by `at` (ties: the first to
   * arrive); none: undefined.
   */
  start(): Held<T> | undefined;
  /**
   * A running message no longer holds its key nor a running slot (its write is final, only its
   * result is still on its way to Kafka): the record's next command may start. It still holds its
   * partition's commit until it is finished.
   */
  release(held: Held<T>): void;
  /** A started message is final (applied, refused, dead-lettered, or given up on stop). */
  finish(held: Held<T>): void;
  /**
   * The offset to commit for `partition` (Kafka's "next to read"), when it moved since the last
   * one handed out: its oldest message not yet final, else one past its newest.
   */
  commitFor(partition: number): bigint | undefined;
  /** The commit `commitFor` handed out did not reach Kafka: hand it out again. */
  commitFailed(partition: number): void;
  /** Partitions with anything held or to commit. */
  partitions(): number[];
  /** Drops the partition's messages not yet started and forgets its offsets (see above). */
  revoke(partition: number): void;
  /** Messages held: waiting, running (released ones too), and still running from revoked partitions. */
  held(): number;
  /** Messages waiting to start. */
  waiting(): number;
  /** Messages running (from revoked partitions too). */
  running(): number;
}

export function createKeyOrder<T>(): KeyOrder<T> {
  const logs = new Map<number, PartitionLog<T>>();
  /** Every queued slot, in arrival order (across partitions). */
  let queue: Slot<T>[] = [];
  /** Keys with a slot running, and how many (an orphan and its re-read copy may both run). */
  const busy = new Map<string, number>();
  /** Slots running per source. */
  const bySource = new Map<string, number>();
  let runningCount = 0;
  let releasedCount = 0;

  /** A slot no longer runs: its key, its source's count and the running count let go of it. */
  const free = (slot: Slot<T>) => {
    runningCount--;
    const n = busy.get(slot.key)! - 1;
    if (n === 0) busy.delete(slot.key);
    else busy.set(slot.key, n);
    const m = bySource.get(slot.source)! - 1;
    if (m === 0) bySource.delete(slot.source);
    else bySource.set(slot.source, m);
  };

  const logOf = (partition: number) => {
    let log = logs.get(partition);
    if (!log) {
      log = { slots: [], next: null, committed: null };
      logs.set(partition, log);
    }
    return log;
  };

  return {
    add(partition, offset, { key, source, at }, item) {
      const log = logOf(partition);
      if (log.next !== null && offset < log.next) return false;
      const slot: Slot<T> = { partition, offset, key, source, at, item, log, state: 'queued' };
      log.slots.push(slot);
      log.next = offset + 1n;
      queue.push(slot);
      return true;
    },
    start() {
      // In arrival order, the first slot of a key not running is the only one of that key that may
      // start (a record's commands keep their order whatever their times say).
      const running = (slot: Slot<T>) => bySource.get(slot.source) ?? 0;
      let best = -1;
      const heads = new Set<string>();
      for (let i = 0; i < queue.length; i++) {
        const slot = queue[i]!;
        if (busy.has(slot.key) || heads.has(slot.key)) continue;
        heads.add(slot.key);
        const other = best < 0 ? undefined : queue[best]!;
        if (
          !other ||
          running(slot) < running(other) ||
          (running(slot) === running(other) && slot.at < other.at)
        )
          best = i;
      }
      if (best < 0) return undefined;
      const [slot] = queue.splice(best, 1);
      slot!.state = 'running';
      busy.set(slot!.key, (busy.get(slot!.key) ?? 0) + 1);
      bySource.set(slot!.source, (bySource.get(slot!.source) ?? 0) + 1);
      runningCount++;
      return slot;
    },
    release(held) {
      const slot = held as Slot<T>;
      if (slot.state !== 'running') throw new Error('release() of a message that is not running');
      slot.state = 'released';
      releasedCount++;
      free(slot);
    },
    finish(held) {
      const slot = held as Slot<T>;
      if (slot.state === 'released') {
        slot.state = 'final';
        releasedCount--;
        return;
      }
      if (slot.state !== 'running') throw new Error('finish() of a message that is not running');
      slot.state = 'final';
      free(slot);
    },
    commitFor(partition) {
      const log = logs.get(partition);
      if (!log || log.next === null) return undefined;
      // Final slots at the front are done with: the commit passes them.
      let done = 0;
      while (done < log.slots.length && log.slots[done]!.state === 'final') done++;
      log.slots.splice(0, done);
      const offset = log.slots.length > 0 ? log.slots[0]!.offset : log.next;
      if (log.committed !== null && offset <= log.committed) return undefined;
      log.committed = offset;
      return offset;
    },
    commitFailed(partition) {
      const log = logs.get(partition);
      if (log) log.committed = null;
    },
    partitions() {
      return [...logs.keys()];
    },
    revoke(partition) {
      if (!logs.has(partition)) return;
      logs.delete(partition);
      queue = queue.filter((slot) => slot.partition !== partition);
    },
    held() {
      return queue.length + runningCount + releasedCount;
    },
    waiting() {
      return queue.length;
    },
    running() {
      return runningCount;
    },
  };
}
