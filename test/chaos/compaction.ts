import { Kafka, logLevel, type Message } from 'kafkajs';
import type { ReadMessage } from './topic-reader.js';

/**
 * What compaction leaves of a chaos run's changelogs (issue 29), with `CHAOS_COMPACTION=1`: each
 * partner.<resource> topic's messages as read at the end of the run are written again, in their
 * order and to their partition, to a topic of their own whose cleaner settings are made eager
 * (rentbridge's own keep 7 days whole: a run is minutes), left to the broker's cleaner, and read
 * back from offset 0 as a new consumer would. Bytes are keys, values and headers, not the disk.
 */

/** The cleaner's settings of the copies: every closed segment cleanable at once. */
const EAGER = {
  'cleanup.policy': 'compact',
  'min.compaction.lag.ms': '0',
  // Rolled by time (a write after segment.ms starts a new one): a segment must hold a whole request.
  'segment.bytes': String(4 * 1024 * 1024),
  'segment.ms': '200',
  'min.cleanable.dirty.ratio': '0.01',
  'delete.retention.ms': '100',
  'max.compaction.lag.ms': '1000',
};
/** Written to each partition after the copy, so that the segment the copy ended in is closed. */
const MARKER = 'chaos-compaction-marker';

const bytesOf = (key: string | null, value: string | null, headers: Record<string, string>): number =>
  Buffer.byteLength(key ?? '') +
  Buffer.byteLength(value ?? '') +
  Object.entries(headers).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);

interface Measure {
  messages: number;
  bytes: number;
  tombstones: number;
}

function measure(messages: ReadMessage[]): Measure {
  return {
    messages: messages.length,
    bytes: messages.reduce((n, m) => n + bytesOf(m.key, m.value, m.headers), 0),
    // The reader gives a null value as '' (a CloudEvent is never empty).
    tombstones: messages.filter((m) => m.value === '').length,
  };
}

/** Figures per changelog: its messages and bytes as the run left them and once compacted. */
export async function measureCompaction(options: {
  brokers: string;
  topics: Map<string, ReadMessage[]>;
  read: (physical: string[]) => Promise<Map<string, ReadMessage[]>>;
  log: (line: string) => void;
  timeoutMs?: number;
}): Promise<Record<string, string | number>> {
  const changelogs = [...options.topics].filter(([t, list]) => t.startsWith('partner.') && list.length > 0);
  const kafka = new Kafka({
    clientId: 'chaos-compaction',
    brokers: [options.brokers],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await Promise.all([admin.connect(), producer.connect()]);
  const figures: Record<string, string | number> = {};
  const copies = changelogs.map(([logical]) => `chaos-compaction.${logical}`);
  try {
    for (const [i, [, list]] of changelogs.entries()) {
      const partitions = Math.max(...list.map((m) => m.partition)) + 1;
      await admin.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic: copies[i]!,
            numPartitions: partitions,
            configEntries: Object.entries(EAGER).map(([name, value]) => ({ name, value })),
          },
        ],
      });
      const messages: Message[] = list.map((m) => ({
        partition: m.partition,
        key: m.key,
        value: m.value === '' ? null : m.value,
        headers: m.headers,
      }));
      for (let at = 0; at < messages.length; at += 200) {
        await producer.send({ topic: copies[i]!, acks: -1, messages: messages.slice(at, at + 200) });
      }
      // After segment.ms: the next write closes the segment the copy ended in.
      await new Promise((r) => setTimeout(r, 500));
      await producer.send({
        topic: copies[i]!,
        acks: -1,
        messages: Array.from({ length: partitions }, (_, partition) => ({
          partition,
          key: MARKER,
          value: 'x',
        })),
      });
    }
    const started = Date.now();
    const deadline = started + (options.timeoutMs ?? 120_000);
    const keysLeft = changelogs.map(([, list]) => {
      // What compaction converges to: the last version of each key whose last version is no tombstone.
      const last = new Map(list.map((m) => [m.key, m.value]));
      return [...last.values()].filter((v) => v !== '').length;
    });
    let read = await options.read(copies);
    // The cleaner looks every 15 s: wait until each copy holds one message per live key (and its
    // markers), or the time is up.
    const settled = () =>
      copies.every((c, i) => (read.get(c) ?? []).filter((m) => m.key !== MARKER).length <= keysLeft[i]!);
    while (!settled() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5000));
      read = await options.read(copies);
    }
    for (const [i, [logical, list]] of changelogs.entries()) {
      const before = measure(list);
      const after = measure((read.get(copies[i]!) ?? []).filter((m) => m.key !== MARKER));
      figures[`${logical}: messages, as run / compacted (live records)`] =
        `${before.messages} / ${after.messages} (${keysLeft[i]})`;
      figures[`${logical}: tombstones, as run / compacted`] = `${before.tombstones} / ${after.tombstones}`;
      figures[`${logical}: bytes, as run / compacted`] =
        `${before.bytes} / ${after.bytes} (${((after.bytes / Math.max(1, before.bytes)) * 100).toFixed(1)} %)`;
    }
    figures['seconds until compacted'] = settled()
      ? Number(((Date.now() - started) / 1000).toFixed(1))
      : `not fully compacted in ${Math.round((deadline - started) / 1000)} s`;
    options.log(`compaction of the changelogs: ${JSON.stringify(figures)}`);
    return figures;
  } finally {
    await admin.deleteTopics({ topics: copies }).catch(() => undefined);
    await Promise.all([admin.disconnect(), producer.disconnect()]);
  }
}
