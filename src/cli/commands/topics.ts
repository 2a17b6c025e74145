import { applyTopicPlan, formatTopicPlan, pendingChanges, readTopicPlan } from '../../kafka/topic-plan.js';
import { topicSettingsFromConfig } from '../../kafka/topic-settings.js';
import { ensureTopics } from '../../kafka/topics.js';
import { createRuntime } from '../../app/runtime.js';
import { loadConfigOrExit } from '../process.js';

/**
 * `rentbridge topics [--apply]`: every topic's settings on the broker beside what rentbridge wants
 * (docs/topics.md). Without --apply it is a dry run: it prints the table and what --apply would
 * change, and changes nothing. With --apply it creates missing topics and alters existing ones in
 * place (configs, added partitions): no topic is recreated, no message lost.
 */
export async function topics(opts: { apply?: boolean }): Promise<void> {
  const config = loadConfigOrExit();
  const runtime = createRuntime(config);
  const admin = runtime.kafka.admin();
  await admin.connect();
  try {
    const settings = topicSettingsFromConfig(config);
    const options = { prefix: config.KAFKA_TOPIC_PREFIX, settings };
    let plan = await readTopicPlan(admin, options);
    process.stdout.write(formatTopicPlan(plan));
    const missing = plan.topics.filter((t) => !t.exists).map((t) => t.topic);
    const altered = pendingChanges(plan).map((t) => t.topic);
    const replicas = plan.topics.filter((t) =>
      t.rows.some((r) => r.setting === 'replication.factor' && r.differs && t.exists),
    );
    if (!opts.apply) {
      process.stdout.write(
        `\ndry run (${plan.brokers} broker(s)): ${missing.length} topic(s) to create, ${altered.length} to alter in place` +
          (missing.length + altered.length > 0 ? '; run `rentbridge topics --apply` to do it\n' : '\n'),
      );
    } else {
      const created = await ensureTopics(admin, options);
      const changed = await applyTopicPlan(admin, plan);
      // Brokers take a moment to show altered configs and new partitions: read back until they do.
      for (let tries = 0; tries < 20; tries++) {
        plan = await readTopicPlan(admin, options);
        if (pendingChanges(plan).length === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      process.stdout.write(
        `\napplied: ${created.length} topic(s) created, ${changed.length} altered in place` +
          (changed.length ? ` (${changed.join(', ')})` : '') +
          '\n',
      );
      const left = pendingChanges(plan).map((t) => t.topic);
      if (left.length > 0) {
        process.stdout.write(`still differing after --apply: ${left.join(', ')}\n`);
        process.exitCode = 1;
      }
    }
    if (replicas.length > 0) {
      process.stdout.write(
        `${replicas.length} topic(s) have another replication factor than wanted: rentbridge does not move replicas; reassign them with kafka-reassign-partitions.sh\n`,
      );
    }
  } finally {
    await admin.disconnect();
    await runtime.close();
  }
}
