/**
 * The logical name of a physical topic: KAFKA_TOPIC_PREFIX taken off when the name carries it.
 * A leaf (it imports nothing), so metrics.ts can use it without importing src/kafka.
 */
export function logicalTopic(prefix: string, physical: string): string {
  return prefix && physical.startsWith(prefix) ? physical.slice(prefix.length) : physical;
}
