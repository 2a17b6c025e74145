import { logLevel } from 'kafkajs';

/**
 * The level a kafkajs log entry is written at. kafkajs's own levels, except for entries that are
 * not a person's business, each decided here with its reason; error level stays for what needs one
 * (a broker that cannot be reached, a consumer that crashed).
 */
export type KafkaLogMethod = 'error' | 'warn' | 'info' | 'debug';

/**
 * Broker answers that are transient while topics are new or leadership moves: kafkajs refreshes its
 * metadata and retries the request itself. Its connection still logs each such answer at error
 * level (`Response Produce(...)`, `error: This server is not the leader for that topic-partition`)
 * as it happens, which every start shows while freshly created topics elect leaders. Logged at
 * debug: when kafkajs's retries run out, the call fails and the caller (relay, consumer) logs it at
 * error level with what it was doing.
 */
const TRANSIENT_RESPONSE_ERRORS: ReadonlySet<string> = new Set([
  // NOT_LEADER_FOR_PARTITION (6)
  'This server is not the leader for that topic-partition',
  // LEADER_NOT_AVAILABLE (5)
  'There is no leader for this topic-partition as we are in the middle of a leadership election',
  // UNKNOWN_TOPIC_OR_PARTITION (3): a topic created a moment ago that this broker does not know yet
  'This server does not host this topic-partition',
  // COORDINATOR_LOAD_IN_PROGRESS (14), GROUP_COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16):
  // a new consumer group's coordinator is still being chosen (every healthy first start shows
  // them); kafkajs finds the coordinator again and retries the join itself.
  "The coordinator is loading and hence can't process requests for this group",
  'The group coordinator is not available',
  'This is not the correct coordinator for this group',
]);

/**
 * kafkajs notices about settings rentbridge chose on purpose, nothing to act on:
 * - the idempotent producer's retries are limited (KAFKA retry `retries: 8`, src/kafka/kafka.ts) so
 *   that a send to an absent broker fails back to its caller instead of hanging; the relay keeps the
 *   rows and sends them again, and consumers dedupe on the CloudEvent id (at least once, which is
 *   the contract: rentbridge does not claim exactly-once).
 */
const DELIBERATE_NOTICES: ReadonlySet<string> = new Set([
  'Limiting retries for the idempotent producer may invalidate EoS guarantees',
]);

/**
 * A one-off CLI command (`topics`, `resync`, `dlq redrive`, ...) whose broker does not answer ends
 * with one line saying so (src/cli/server-unreachable.ts): kafkajs's own line per connection try
 * is debug there. The long-running roles keep them at error level.
 */
let connectionFailuresAtDebug = false;
export function logConnectionFailuresAtDebug(): void {
  connectionFailuresAtDebug = true;
}
const CONNECTION_FAILURE = /^(Connection error|Connection timeout|Failed to connect to seed broker)/;

export function kafkaLogMethod(
  level: logLevel,
  message: string,
  fields: Record<string, unknown>,
): KafkaLogMethod {
  if (DELIBERATE_NOTICES.has(message)) return 'debug';
  if (connectionFailuresAtDebug && CONNECTION_FAILURE.test(message)) return 'debug';
  if (
    level === logLevel.ERROR &&
    message.startsWith('Response ') &&
    typeof fields.error === 'string' &&
    TRANSIENT_RESPONSE_ERRORS.has(fields.error)
  )
    return 'debug';
  if (level === logLevel.ERROR) return 'error';
  if (level === logLevel.WARN) return 'warn';
  return level === logLevel.INFO ? 'info' : 'debug';
}
