import pg from 'pg';
import { parseDatabaseUrl } from '../db/database-url.js';
import type { Logger } from '../logger.js';
import { WAITING_TOPICS_CTE, type OutboxRow } from './outbox-reader.js';

/**
 * The relay's hot path in PostgreSQL, on a small node-postgres pool of its own (Prisma's engine
 * cost about as much CPU per row as the whole send): the unpublished rows of one topic after an id,
 * found through the partial index `outbox_unpublished_topic_id_idx` (never walking the published
 * rows kept for retention), one statement marking a batch published, and the topics with rows
 * waiting (a loose index scan of the same index: one probe per topic).
 */
export interface OutboxStreamReader {
  fetch(topic: string, afterId: bigint, limit: number): Promise<OutboxRow[]>;
  /** One statement for the batch; `positions` (by id) say where each row landed on Kafka. */
  markPublished(ids: bigint[], positions?: Map<bigint, { partition: number; offset: string }>): Promise<void>;
  topicsWaiting(): Promise<string[]>;
  close(): Promise<void>;
}

interface Raw {
  id: string;
  event_id: string;
  key: string;
  type: string;
  source: string | null;
  subject: string | null;
  data: unknown;
  headers: Record<string, string> | null;
  created_at: Date | null;
  attempts: number;
  message_value: Buffer | string | null;
}

export function createOutboxStreamReader(options: {
  databaseUrl: string;
  logger: Logger;
}): OutboxStreamReader {
  const { connectionString, schema } = parseDatabaseUrl(options.databaseUrl);
  // A fetch and a mark per topic stream may be under way at once.
  const pool = new pg.Pool({
    connectionString,
    options: `-c search_path=${schema}`,
    application_name: 'rentbridge-relay',
    max: 4,
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', (error) => options.logger.warn({ err: error }, 'relay pool connection lost'));

  // The stored value as text where the database is UTF-8 (it holds JSON text written by rentbridge):
  // half the bytes of bytea's hex on the wire, no hex to decode. Elsewhere (another encoding could
  // not hold every character) as bytes. Asked once, at the first read that reaches the database.
  let asText: Promise<boolean> | undefined;
  const textValues = () =>
    (asText ??= pool
      .query<{ server_encoding: string }>('SHOW server_encoding')
      .then(({ rows }) => rows[0]?.server_encoding === 'UTF8')
      .catch(() => {
        asText = undefined;
        return false;
      }));

  return {
    async fetch(topic, afterId, limit) {
      const text = await textValues();
      // The ids through the partial index (an index-only scan that never meets a published row),
      // then their rows by primary key. Asked in one query, the planner preferred walking the
      // primary key past every published row (a LIMIT misestimate): 28 ms against 0.3 ms at
      // 20,000 published rows, and growing with them.
      const { rows } = await pool.query<Raw>({
        name: text ? 'relay-fetch-text' : 'relay-fetch',
        // What the message is built from only for a row whose message was not built when it was
        // written (older rows, tombstones): parsing `data` is most of what the stored value saves.
        text: `SELECT id, event_id, key, type, headers, attempts,
                      ${text ? `convert_from(message_value, 'UTF8') AS message_value` : 'message_value'},
                      CASE WHEN message_value IS NULL THEN source END AS source,
                      CASE WHEN message_value IS NULL THEN subject END AS subject,
                      CASE WHEN message_value IS NULL THEN created_at END AS created_at,
                      CASE WHEN message_value IS NULL THEN data END AS data
                 FROM outbox
                WHERE id = ANY(ARRAY(
                        SELECT id FROM outbox
                         WHERE topic = $1 AND id > $2 AND published_at IS NULL AND parked_at IS NULL
                         ORDER BY id LIMIT $3))
                ORDER BY id`,
        values: [topic, afterId.toString(), limit],
      });
      return rows.map((r) => ({
        id: BigInt(r.id),
        eventId: r.event_id,
        topic,
        key: r.key,
        type: r.type,
        source: r.source ?? '',
        subject: r.subject,
        data: r.data,
        headers: r.headers ?? {},
        // Read only when the message was not stored (it is built from these fields then).
        createdAt: r.created_at ?? new Date(0),
        attempts: r.attempts,
        messageValue: r.message_value,
      }));
    },
    async markPublished(ids, positions = new Map()) {
      await pool.query({
        name: 'relay-mark',
        text: `UPDATE outbox o SET published_at = now(), attempts = o.attempts + 1,
                      kafka_partition = p.partition, kafka_offset = p.kafka_offset
                 FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS p(id, partition, kafka_offset)
                WHERE o.id = p.id`,
        // Array literals joined here: node-postgres escapes an array parameter element by element.
        values: [
          `{${ids.join(',')}}`,
          `{${ids.map((id) => positions.get(id)?.partition ?? 'NULL').join(',')}}`,
          `{${ids.map((id) => positions.get(id)?.offset ?? 'NULL').join(',')}}`,
        ],
      });
    },
    async topicsWaiting() {
      const { rows } = await pool.query<{ topic: string }>(
        `${WAITING_TOPICS_CTE} SELECT topic FROM t WHERE topic IS NOT NULL`,
      );
      return rows.map((r) => r.topic);
    },
    async close() {
      await pool.end().catch(() => undefined);
    },
  };
}
