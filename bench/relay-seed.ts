import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { messageValueText } from '../src/outbox/outbox-message.js';

/** The logical topic of the relay bench's backlog. */
export const BACKLOG_TOPIC = 'partner.applications';
const TYPE = 'partner.application.updated';
const SOURCE = '/poller/applications';

/**
 * Unpublished state changes shaped like the poller's (a record of ~400 bytes, a correlation
 * header), written as the poller writes them (src/outbox/outbox-repository.ts): with the message
 * value built at write time, unless `storedValues` is false (rows as written before values were
 * stored: the relay builds each message at send time). Above them, `published` rows already
 * published and kept for retention.
 */
export async function seedBacklog(
  sql: pg.Pool,
  rows: number,
  published: number,
  options: { storedValues?: boolean } = {},
): Promise<void> {
  const total = published + rows;
  for (let from = 1; from <= total; from += 5000) {
    const to = Math.min(total, from + 4999);
    const createdAt = new Date();
    const batch = [];
    for (let i = from; i <= to; i++) {
      const id = `app-${i % 5000}`;
      const row = {
        eventId: randomUUID(),
        key: id,
        type: TYPE,
        source: SOURCE,
        subject: id,
        data: {
          id,
          status: 'submitted',
          updated_at: createdAt.toISOString(),
          applicant: { first_name: 'Ada', last_name: 'Lovelace', email: `ada${i}@example.com` },
          property_id: `prop-${i % 97}`,
          unit: `Unit ${i % 300}`,
          monthly_rent_cents: 125_000 + (i % 1000),
          notes: 'x'.repeat(120),
        },
        headers: { 'partner-request-id': `req_${i}` },
        createdAt,
      };
      batch.push({
        event_id: row.eventId,
        key: row.key,
        subject: row.subject,
        data: row.data,
        headers: row.headers,
        created_at: createdAt,
        message_value: options.storedValues === false ? null : messageValueText(row),
        published: i <= published,
      });
    }
    await sql.query(
      `INSERT INTO outbox (event_id, topic, key, type, source, subject, data, headers, created_at,
                           message_value, published_at)
       SELECT r.event_id, $2, r.key, $3, $4, r.subject, r.data, r.headers, r.created_at,
              convert_to(r.message_value, 'UTF8'), CASE WHEN r.published THEN now() END
         FROM jsonb_to_recordset($1::jsonb) AS r(event_id uuid, key text, subject text, data jsonb,
              headers jsonb, created_at timestamptz, message_value text, published boolean)`,
      [JSON.stringify(batch), BACKLOG_TOPIC, TYPE, SOURCE],
    );
  }
  await sql.query('VACUUM ANALYZE outbox');
}
