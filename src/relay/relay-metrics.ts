import { allTopics } from '../kafka/topics.js';
import { exposeMetrics, metrics, startAtZero } from '../metrics.js';

/**
 * The relay's metrics on this process's /metrics, its per-topic counters from 0 for every topic
 * rentbridge knows (src/metrics.ts: the first parked row of a topic must show as an increase).
 */
export function exposeRelayMetrics(): void {
  exposeMetrics('relay');
  startAtZero(metrics.relayPublished, { topic: allTopics() });
  startAtZero(metrics.relayParked, { topic: allTopics() });
}
