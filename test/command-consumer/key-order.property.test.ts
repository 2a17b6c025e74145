import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createKeyOrder, type Held } from '../../src/command-consumer/key-order.js';

/**
 * The command consumer's scheduling core (src/command-consumer/key-order.ts, decision 054) over
 * random interleavings of what Kafka and the running commands do: messages of three partitions
 * arriving in partition order (and some fetched twice) with times taken in that need not follow
 * their order (clocks, retries), commands starting, releasing their record (write final, result on
 * its way) and ending in any order,
 * commits that land or fail, and partitions revoked (a rebalance), after which Kafka reads them
 * again from the committed offset. Whatever the interleaving:
 * - a record's command starts only after each earlier command for that record has released it or
 *   ended;
 * - a committed offset never passes a command that has not ended, and never goes back;
 * - nothing is lost: once Kafka has delivered everything and every command has ended, each
 *   partition's committed offset is its end, and every message was applied.
 */

type Step =
  | { do: 'deliver'; partition: number }
  | { do: 'refetch'; partition: number; back: number }
  | { do: 'start' }
  | { do: 'release'; pick: number }
  | { do: 'finish'; pick: number }
  | { do: 'commit'; partition: number; lands: boolean }
  | { do: 'revoke'; partition: number };

const PARTITIONS = 3;
const partition = fc.integer({ min: 0, max: PARTITIONS - 1 });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: partition.map((p) => ({ do: 'deliver' as const, partition: p })) },
  {
    weight: 1,
    arbitrary: fc
      .record({ partition, back: fc.integer({ min: 1, max: 4 }) })
      .map((r) => ({ do: 'refetch' as const, ...r })),
  },
  { weight: 5, arbitrary: fc.constant({ do: 'start' as const }) },
  { weight: 2, arbitrary: fc.nat().map((pick) => ({ do: 'release' as const, pick })) },
  { weight: 5, arbitrary: fc.nat().map((pick) => ({ do: 'finish' as const, pick })) },
  {
    weight: 3,
    arbitrary: fc.record({ partition, lands: fc.boolean() }).map((r) => ({ do: 'commit' as const, ...r })),
  },
  { weight: 1, arbitrary: partition.map((p) => ({ do: 'revoke' as const, partition: p })) },
);

/**
 * Each partition's log: the key (target record) of each offset and when it was taken in. Keys live
 * in one partition, as Kafka keys do.
 */
const logs = fc.array(
  fc.array(fc.record({ key: fc.integer({ min: 0, max: 4 }), at: fc.integer({ min: 0, max: 50 }) }), {
    minLength: 0,
    maxLength: 25,
  }),
  { minLength: PARTITIONS, maxLength: PARTITIONS },
);

interface Msg {
  partition: number;
  offset: number;
}

function run(log: Array<Array<{ key: number; at: number }>>, steps: Step[]) {
  const order = createKeyOrder<Msg>();
  const keyOf = (p: number, o: number) => `p${p}-k${log[p]![o]!.key}`;
  const orderingOf = (p: number, o: number) => ({
    key: keyOf(p, o),
    source: `s${log[p]![o]!.key % 2}`,
    at: log[p]![o]!.at,
  });
  const fetchPos = log.map(() => 0);
  const committed = log.map(() => 0);
  /** Messages applied at least once (ended), by partition. */
  const applied = log.map(() => new Set<number>());
  /** Messages whose record was released before they ended, by partition. */
  const freed = log.map(() => new Set<number>());
  const running: Held<Msg>[] = [];
  /** Started, and released or running: not yet ended. */
  const started: Held<Msg>[] = [];

  const startOne = () => {
    const held = order.start();
    if (!held) return false;
    const { partition: p, offset: o } = held.item;
    // Every earlier command of the same record has released it or ended before this one starts.
    for (let earlier = 0; earlier < o; earlier++) {
      if (keyOf(p, earlier) === held.key)
        expect(
          applied[p]!.has(earlier) || freed[p]!.has(earlier),
          `p${p} offset ${earlier} released or ended before ${o}`,
        ).toBe(true);
    }
    // One command at a time per record.
    expect(running.some((r) => r.key === held.key)).toBe(false);
    running.push(held);
    started.push(held);
    return true;
  };
  const releaseAt = (i: number) => {
    const [held] = running.splice(i, 1);
    order.release(held!);
    freed[held!.item.partition]!.add(held!.item.offset);
  };
  const finishAt = (i: number) => {
    const [held] = started.splice(i, 1);
    const r = running.indexOf(held!);
    if (r >= 0) running.splice(r, 1);
    order.finish(held!);
    applied[held!.item.partition]!.add(held!.item.offset);
  };
  const commit = (p: number, lands: boolean) => {
    const offset = order.commitFor(p);
    if (offset === undefined) return;
    const o = Number(offset);
    if (!lands) return order.commitFailed(p);
    // Never past a command that has not ended; never back.
    for (let before = 0; before < o; before++)
      expect(applied[p]!.has(before), `p${p} committed ${o} past ${before}`).toBe(true);
    expect(o).toBeGreaterThanOrEqual(committed[p]!);
    committed[p] = o;
  };
  const deliver = (p: number, o: number) => {
    order.add(p, BigInt(o), orderingOf(p, o), { partition: p, offset: o });
  };

  for (const s of steps) {
    switch (s.do) {
      case 'deliver':
        if (fetchPos[s.partition]! < log[s.partition]!.length) deliver(s.partition, fetchPos[s.partition]!++);
        break;
      case 'refetch': {
        // A fetch that returns messages already held: taken once.
        const o = fetchPos[s.partition]! - s.back;
        if (o >= 0)
          expect(
            order.add(s.partition, BigInt(o), orderingOf(s.partition, o), {
              partition: s.partition,
              offset: o,
            }),
          ).toBe(false);
        break;
      }
      case 'start':
        startOne();
        break;
      case 'release':
        if (running.length > 0) releaseAt(s.pick % running.length);
        break;
      case 'finish':
        if (started.length > 0) finishAt(s.pick % started.length);
        break;
      case 'commit':
        commit(s.partition, s.lands);
        break;
      case 'revoke':
        // The partition comes back (here or elsewhere) from its committed offset.
        order.revoke(s.partition);
        fetchPos[s.partition] = committed[s.partition]!;
        break;
    }
    expect(order.held()).toBe(order.waiting() + started.length);
    expect(order.running()).toBe(running.length);
  }

  // Drain: Kafka delivers the rest, every command runs and ends, every partition commits.
  for (;;) {
    let moved = false;
    for (let p = 0; p < PARTITIONS; p++)
      while (fetchPos[p]! < log[p]!.length) {
        deliver(p, fetchPos[p]!++);
        moved = true;
      }
    while (startOne()) moved = true;
    if (started.length > 0) {
      finishAt(0);
      moved = true;
    }
    if (!moved) break;
  }
  for (let p = 0; p < PARTITIONS; p++) {
    commit(p, true);
    expect(applied[p]!.size).toBe(log[p]!.length);
    if (log[p]!.length > 0 || committed[p]! > 0) expect(committed[p]).toBe(log[p]!.length);
  }
  expect(order.held()).toBe(0);
}

describe('the command consumer key order (pure core)', () => {
  it('keeps each record in arrival order, never commits past an unfinished command, loses nothing', () => {
    fc.assert(
      fc.property(logs, fc.array(step, { maxLength: 300 }), (log, steps) => run(log, steps)),
      { numRuns: 400 },
    );
  });

  it('lets another record overtake a slow one, in the same partition', () => {
    const order = createKeyOrder<string>();
    const of = (key: string, at: number) => ({ key, source: 'pms', at });
    order.add(0, 10n, of('slow', 1), 'pay-1');
    order.add(0, 11n, of('slow', 2), 'pay-2');
    order.add(0, 12n, of('other', 3), 'other-1');
    order.add(0, 13n, of('slow', 4), 'decision');
    const first = order.start()!;
    expect(first.item).toBe('pay-1');
    // pay-2 and the decision wait for pay-1; the other record's command does not.
    expect(order.start()!.item).toBe('other-1');
    expect(order.start()).toBeUndefined();
    order.finish(first);
    // Nothing committed past pay-1 while it ran; once it ended, up to pay-2 (not yet final).
    expect(order.commitFor(0)).toBe(11n);
    expect(order.start()!.item).toBe('pay-2');
  });

  it("starts a small source's command before more of a bursting source's, whatever came first", () => {
    const order = createKeyOrder<string>();
    for (let i = 0; i < 10; i++)
      order.add(i % 3, BigInt(i), { key: `big-${i}`, source: 'bigpms', at: i }, `big-${i}`);
    order.add(1, 100n, { key: 'small-1', source: 'smallpms', at: 100 }, 'small-1');
    expect(order.start()!.item).toBe('big-0');
    // bigpms has one running, smallpms none: the next free slot is smallpms's.
    expect(order.start()!.item).toBe('small-1');
    expect(order.start()!.item).toBe('big-1');
  });

  it('starts the records of a partition read after the others by when their commands came, not after the others drain', () => {
    // After a Kafka outage partition 0's backlog is read whole before partition 1's: records a–d
    // (partition 0) and w–z (partition 1), two commands each, taken in alternately.
    const order = createKeyOrder<string>();
    const records = { 0: ['a', 'b', 'c', 'd'], 1: ['w', 'x', 'y', 'z'] };
    for (const [p, keys] of Object.entries(records))
      for (let round = 0; round < 2; round++)
        keys.forEach((key, i) => {
          const at = round * 8 + i * 2 + Number(p);
          order.add(Number(p), BigInt(round * 4 + i), { key, source: 'pms', at }, `${key}${round + 1}`);
        });
    // Four run at once: the oldest of each partition's records alternate.
    const running = [order.start()!, order.start()!, order.start()!, order.start()!];
    expect(running.map((h) => h.item)).toEqual(['a1', 'w1', 'b1', 'x1']);
    // a1 ends: a2 (taken in at 8) waits behind c1 (4), y1 (5), d1 (6), z1 (7).
    order.finish(running[0]!);
    expect(order.start()!.item).toBe('c1');
  });

  it("starts a record's next command once the write before it is final, and commits only after its end", () => {
    const order = createKeyOrder<string>();
    order.add(0, 0n, { key: 'enrollment-1', source: 'pms', at: 1 }, 'pay-1');
    order.add(0, 1n, { key: 'enrollment-1', source: 'pms', at: 2 }, 'pay-2');
    const first = order.start()!;
    expect(order.start()).toBeUndefined();
    // pay-1's write is final; its outcome is on its way to Kafka.
    order.release(first);
    const second = order.start()!;
    expect(second.item).toBe('pay-2');
    expect(order.running()).toBe(1);
    expect(order.held()).toBe(2);
    // Nothing is committed past pay-1 until its outcome is on Kafka.
    expect(order.commitFor(0)).toBe(0n);
    order.finish(first);
    expect(order.commitFor(0)).toBe(1n);
    order.finish(second);
    expect(order.commitFor(0)).toBe(2n);
    expect(order.held()).toBe(0);
  });
});
