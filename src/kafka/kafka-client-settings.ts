import type { AdminConfig, ConsumerConfig, KafkaConfig, ProducerConfig, RetryOptions } from 'kafkajs';

/**
 * How every kafkajs client of rentbridge finds a moved leader and rides out a lost broker, in one
 * place (decision 056 says why each value). `createKafka` (src/kafka/kafka.ts) builds the client
 * with `CLIENT_SETTINGS` and gives every producer, consumer and admin made from it the settings
 * below under the caller's own: the relay's and the outcomes' shared producer, every consumer (the
 * command consumers, the callbacks' intake, the dead-letter indexer) and the readiness probe's
 * admin hold them without naming them.
 *
 * What happens when a broker of three is killed (kafkajs 2.2.4, as patched in patches/): its
 * connections close, a request in flight fails at once, and the client reads the metadata again
 * (the producer on any connection error and on NOT_LEADER_OR_FOLLOWER; a consumer's fetcher for
 * that broker before its next try, 250 ms later, while the other brokers' fetchers go on: our patch
 * to `recoverFromFetch`). The metadata still names the dead broker as leader until the controller
 * fences it (`broker.session.timeout.ms`: 9 s by Kafka's default, 3 s on the test cluster); until
 * then every retry fails the same way. So what decides the gap is how soon after the fencing a
 * retry comes: the retry back-off, capped at 0.3 s here (kafkajs's default cap is 30 s, and its
 * doubling from 300 ms had reached 4.8 to 9.6 s by then). A consumer whose group's coordinator was
 * on the lost broker follows the group to its new coordinator and keeps its membership (our patch
 * to the heartbeat; kafkajs crashed and rejoined, or rejoined on NOT_COORDINATOR, each a pause of
 * seconds).
 */

/**
 * Retries of every request but a send, and of a consumer's fetch loop: at most 0.3 s apart, about
 * 30 s in all before giving up (a consumer's fetch loop then restarts). A consumer had kafkajs's 5
 * tries, about 4 s at a 1 s cap: its loop gave up before a lost broker was fenced and rejoined
 * the group, a second pause of 3–4 s.
 */
const RETRY: RetryOptions = {
  initialRetryTime: 200,
  maxRetryTime: 300,
  multiplier: 1.5,
  factor: 0.2,
  retries: 100,
};

export const CLIENT_SETTINGS: Pick<
  KafkaConfig,
  'connectionTimeout' | 'requestTimeout' | 'enforceRequestTimeout' | 'retry'
> = Object.freeze({
  // A broker on the same network answers a connect in milliseconds; one that does not answer in a
  // second is gone for this try (kafkajs's default, named on purpose).
  connectionTimeout: 1000,
  // The longest wait for any answer: above the produce ack time-out (the broker's own wait for
  // its replicas) with room for a loaded broker; kafkajs's 30 s held a request to a broker that
  // vanished without closing its socket for half a minute.
  requestTimeout: 8000,
  enforceRequestTimeout: true,
  retry: RETRY,
});

/**
 * How long a client keeps a leader it learned without an error telling it otherwise (a leader
 * moved back to a revived broker, partitions added): 10 s, not kafkajs's 5 minutes. Costs one
 * small metadata request per client every 10 s while it works.
 */
const METADATA_MAX_AGE_MS = 10_000;

/**
 * The produce request's ack time-out: how long the leader waits for the in-sync replicas (acks=all)
 * before it answers REQUEST_TIMED_OUT. Below `requestTimeout`, so the broker answers before the
 * client gives up on the request (a resend after the client gave up has an unknown fate; a
 * retriable answer does not). Below the fencing of a dead follower too: the send is retried with the
 * same producer id and sequence, and Kafka drops the copy if the first was written.
 */
export const PRODUCE_ACK_TIMEOUT_MS = 5000;

/** Every send of rentbridge: acknowledged by every in-sync replica (min.insync.replicas 2). */
export const PRODUCE_REQUEST = Object.freeze({ acks: -1, timeout: PRODUCE_ACK_TIMEOUT_MS });

/**
 * A producer's own retries carry a send whose fate is unknown to its end with the SAME producer id
 * and sequence numbers (kafkajs rolls the sequence back on a failed request and sends the same
 * batch again), so the broker drops a copy it already wrote: a resend by the relay, or by a new
 * producer, would be a duplicate. At most 0.3 s apart, for about five minutes: longer than an
 * outage that is not a disaster, so the relay and the consumers wait on the same send instead of
 * starting another. The first retry comes after 50 ms: a send refused by a lost leader has read the
 * metadata again already, and names the new leader if the broker was fenced.
 */
export const PRODUCER_SETTINGS: Pick<ProducerConfig, 'metadataMaxAge' | 'retry'> = Object.freeze({
  metadataMaxAge: METADATA_MAX_AGE_MS,
  retry: { ...RETRY, initialRetryTime: 50, retries: 1000 },
});

/**
 * Every consumer: a member that stops heartbeating (its process killed, its host gone) is out of the
 * group after `sessionTimeout` and its partitions go to the others; a heartbeat every second keeps
 * a live one in well within it (a third of it or less, as Kafka asks). The group waits at most
 * `rebalanceTimeout` (60 s, kafkajs's default, kept on purpose) for its members to join a
 * rebalance: a member rejoins only once the command in its hands is done, and a command may take
 * PARTNER_MAX_PROCESSING_MS (30 s) and more; a shorter wait would put it out of the group and hand
 * its command to another member mid-write. Broker losses do not rebalance the group (its members
 * stay, the coordinator moves). `sessionTimeout` is KAFKA_SESSION_TIMEOUT_MS (default 6 s, the
 * least the broker accepts: a coordinator that moves to another broker gives the members it loads
 * a fresh session, and a member it still holds for a consumer that crashed makes the next join
 * wait until that session ends; measured on the test cluster after a two-broker outage, every
 * /readyz 200 1.3 s after the brokers answered with 6 s, 8.4 s with 10 s, decision 056). A
 * consumer whose join failed leaves the group before kafkajs restarts it (patches/), so an
 * outage's restarts no longer leave such members behind.
 */
export function consumerSettings(
  sessionTimeoutMs = 6_000,
): Pick<
  ConsumerConfig,
  'sessionTimeout' | 'heartbeatInterval' | 'rebalanceTimeout' | 'metadataMaxAge' | 'maxWaitTimeInMs' | 'retry'
> {
  return {
    retry: RETRY,
    sessionTimeout: sessionTimeoutMs,
    heartbeatInterval: Math.min(1000, Math.floor(sessionTimeoutMs / 3)),
    rebalanceTimeout: 60_000,
    metadataMaxAge: METADATA_MAX_AGE_MS,
    // A stop waits for the fetch in flight: 1 s instead of kafkajs's 5 s long poll (one fetch a
    // second from an idle consumer).
    maxWaitTimeInMs: 1000,
  };
}

export const ADMIN_SETTINGS: Pick<AdminConfig, 'retry'> = Object.freeze({ retry: RETRY });
