import type { Admin, Consumer } from 'kafkajs';

/** Crashes within this window that make a consumer "crash-looping", until it works again. */
const CRASH_WINDOW_MS = 5 * 60_000;
const CRASHES_TO_LOOP = 3;
/**
 * After its last crash a consumer works again once it commits an offset, or once it has stayed in
 * its group this long (an idle consumer commits nothing). A consumer that crashes on a message
 * again and again does neither: it never commits past it, and kafkajs restarts it within a second.
 */
const STABLE_IN_GROUP_MS = 15_000;
/** The longest first join counted as ready (readyWhileJoining): past the 60 s rebalance timeout (kafka-client-settings.ts). */
const JOIN_GRACE_MS = 90_000;

export interface ConsumerState {
  groupId: string;
  /** Joined and not rebalancing. */
  inGroup: boolean;
  memberId: string | null;
  /** Crashes (kafkajs restarts the consumer after each retriable one) in the last five minutes. */
  recentCrashes: number;
  lastCrash: string | null;
  /** Messages behind the end of each topic it reads (committed offset to high watermark). */
  lag?: Record<string, number>;
}

export interface ConsumerHealth {
  /** `true`, or why the consumer is not doing its work: not in its group, crash-looping, stopped. */
  check(): true | string;
  /** Its state and, read through `admin`, its lag per topic. */
  details(admin: Admin): Promise<ConsumerState>;
}

export interface WatchedConsumer extends ConsumerHealth {
  /**
   * The consumer's own code gave up (a command consumer stops itself on a bug, decision 021, as
   * kafkajs does on an error it does not restart after): reported until the process restarts.
   */
  fail(reason: string): void;
  /** Its first join begins (connected, subscribed, run() called): from here readyWhileJoining counts. */
  joining(): void;
}

/**
 * Follows a kafkajs consumer's instrumentation events (join, rebalance, crash, stop) so /readyz
 * tells whether this process consumes: in its group, not crash-looping, and how far behind.
 * `topics` gives the (prefixed) topics it reads, for the lag.
 */
export function watchConsumer(
  consumer: Consumer,
  options: {
    groupId: string;
    topics: () => Promise<string[]> | string[];
    /**
     * Ready while it joins its group the first time (not crashed, not stopped), for at most
     * JOIN_GRACE_MS: after a crash the first join waits up to the dead process's session timeout
     * for the broker to drop its member, and the process serves meanwhile (its receiver takes
     * webhooks, its backlog waits in Kafka, nothing is lost). A first join slower than the grace is
     * work that does not start: not ready. Once joined, leaving the group is not ready again.
     */
    readyWhileJoining?: boolean;
  },
): WatchedConsumer {
  let joiningSince: number | null = null;
  let inGroup = false;
  let joined = false;
  let memberId: string | null = null;
  let running = true;
  let gaveUp: string | null = null;
  const crashes: number[] = [];
  let joinedAt = 0;
  // Whether it committed since its last crash: a Kafka outage's crashes end when work resumes, not
  // five minutes later (issue 53: /readyz stayed 503 after both brokers were back and outcomes flowed).
  let committedSinceCrash = true;
  const { GROUP_JOIN, REBALANCING, CRASH, STOP, DISCONNECT, COMMIT_OFFSETS } = consumer.events;
  consumer.on(GROUP_JOIN, (event) => {
    inGroup = true;
    joined = true;
    joinedAt = Date.now();
    running = true;
    gaveUp = null;
    memberId = event.payload.memberId;
  });
  consumer.on(COMMIT_OFFSETS, () => (committedSinceCrash = true));
  consumer.on(REBALANCING, () => (inGroup = false));
  consumer.on(CRASH, (event) => {
    inGroup = false;
    committedSinceCrash = false;
    crashes.push(event.timestamp);
    // kafkajs restarts after a retriable error; otherwise the consumer is done until the process restarts.
    if (!event.payload.restart) gaveUp = event.payload.error.message;
  });
  consumer.on(STOP, () => ((inGroup = false), (running = false)));
  consumer.on(DISCONNECT, () => ((inGroup = false), (running = false)));

  const recentCrashes = () => {
    const since = Date.now() - CRASH_WINDOW_MS;
    while (crashes.length > 0 && crashes[0]! < since) crashes.shift();
    return crashes.length;
  };

  return {
    joining() {
      joiningSince ??= Date.now();
    },
    fail(reason) {
      crashes.push(Date.now());
      gaveUp = reason;
    },
    check() {
      if (gaveUp) return `the consumer crashed and will not restart: ${gaveUp}`;
      if (!running) return 'the consumer is stopped';
      const recent = recentCrashes();
      const workingAgain = committedSinceCrash || (inGroup && Date.now() - joinedAt >= STABLE_IN_GROUP_MS);
      if (recent >= CRASHES_TO_LOOP && !workingAgain)
        return `crash-looping: ${recent} crashes in the last 5 minutes`;
      if (inGroup) return true;
      const inGrace = joiningSince !== null && Date.now() - joiningSince < JOIN_GRACE_MS;
      if (options.readyWhileJoining && !joined && inGrace) return true;
      return `not in its consumer group ${options.groupId} (joining or rebalancing)`;
    },
    async details(admin) {
      const state: ConsumerState = {
        groupId: options.groupId,
        inGroup,
        memberId,
        recentCrashes: recentCrashes(),
        lastCrash: crashes.length > 0 ? new Date(crashes[crashes.length - 1]!).toISOString() : null,
      };
      const topics = await options.topics();
      if (topics.length === 0) return state;
      const committed = await admin.fetchOffsets({ groupId: options.groupId, topics });
      const lag: Record<string, number> = {};
      for (const { topic, partitions } of committed) {
        const ends = await admin.fetchTopicOffsets(topic);
        lag[topic] = partitions.reduce((sum, p) => {
          const end = ends.find((e) => e.partition === p.partition);
          if (!end) return sum;
          // -1: nothing committed yet, so everything from the log's start is still to read.
          const from = p.offset === '-1' ? BigInt(end.low) : BigInt(p.offset);
          return sum + Number(BigInt(end.high) - from);
        }, 0);
      }
      return { ...state, lag };
    },
  };
}
