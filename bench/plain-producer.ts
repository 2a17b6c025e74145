/**
 * The plain producer of `npm run bench -- relay`, in a process of its own so that neither side's
 * heap weighs on the other's (the relay does not hold 100,000 prebuilt messages, nor the plain
 * producer the relay's reads). Env: DATABASE_URL (with its schema), KAFKA_BROKERS, TOPIC (physical),
 * OUTBOX_TOPIC, AFTER_ID, ROWS, PASSES, KAFKAJS (`stock`: kafkajs 2.2.4 as published, the
 * `kafkajs-stock` alias; `patched`: the project's kafkajs, with patches/ applied). Reads the ROWS outbox rows of OUTBOX_TOPIC after AFTER_ID
 * (published or not), builds the very messages the relay sends (same keys,
 * values, headers) in requests of RELAY_MAX_BATCH_BYTES, then sends them PASSES times with a kafkajs
 * idempotent producer (acks=all, one request after the other); prints one JSON line per pass:
 * msgs/s and CPU µs per message of the sends alone.
 */
import type { Kafka as KafkaClass, logLevel as LogLevel, Message } from 'kafkajs';
import pg from 'pg';
import { parseDatabaseUrl, quoteIdent } from '../src/db/database-url.js';
import {
  DEFAULT_MAX_BATCH_BYTES,
  messageBytes,
  toKafkaMessage,
  type OutboxMessageRow,
} from '../src/outbox/outbox-message.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const { connectionString, schema } = parseDatabaseUrl(env('DATABASE_URL'));
const topic = env('TOPIC');
const sql = new pg.Client({ connectionString, options: `-c search_path=${quoteIdent(schema)}` });
await sql.connect();

// Read in slices (a million rows at once would be several GB of row objects), built as they come.
const batches: Message[][] = [[]];
let bytes = 0;
let count = 0;
let after = env('AFTER_ID');
const wanted = Number(env('ROWS'));
while (count < wanted) {
  // Named as the message's row fields, so each row is given to toKafkaMessage as it comes.
  const { rows } = await sql.query<OutboxMessageRow & { id: string }>(
    `SELECT id, event_id AS "eventId", key, type, source, subject, data, headers,
            created_at AS "createdAt", message_value AS "messageValue"
       FROM outbox WHERE topic = $1 AND id > $2 ORDER BY id LIMIT $3`,
    [env('OUTBOX_TOPIC'), after, Math.min(20_000, wanted - count)],
  );
  if (rows.length === 0) break;
  for (const r of rows) {
    const message = toKafkaMessage(r);
    const size = messageBytes(message);
    if (bytes + size > DEFAULT_MAX_BATCH_BYTES && batches.at(-1)!.length > 0) {
      batches.push([]);
      bytes = 0;
    }
    batches.at(-1)!.push(message);
    bytes += size;
  }
  count += rows.length;
  after = rows.at(-1)!.id;
}
await sql.end();

// The stock client is the baseline: the project's patches make kafkajs faster for any producer.
const { Kafka, logLevel } = (await import(
  process.env.KAFKAJS === 'patched' ? 'kafkajs' : 'kafkajs-stock'
)) as {
  Kafka: typeof KafkaClass;
  logLevel: typeof LogLevel;
};
const kafka = new Kafka({
  clientId: 'bench-plain',
  brokers: env('KAFKA_BROKERS').split(','),
  logLevel: logLevel.NOTHING,
});
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
await producer.connect();
await producer.send({ topic, acks: -1, messages: [batches[0]![0]!] });
for (let pass = 0; pass < Number(process.env.PASSES ?? 1); pass++) {
  const cpu = process.cpuUsage();
  const start = Date.now();
  for (const messages of batches) {
    await producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages }] });
  }
  const used = process.cpuUsage(cpu);
  console.log(
    JSON.stringify({
      rate: Math.round(count / ((Date.now() - start) / 1000)),
      cpu: Math.round((used.user + used.system) / count),
    }),
  );
}
await producer.disconnect();
