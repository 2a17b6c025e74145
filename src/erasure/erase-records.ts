import type { Prisma } from '@prisma/client';
import { tombstone } from '../changes/record-changes.js';
import { TOPICS } from '../kafka/topics.js';
import { insertOutboxRows } from '../outbox/outbox-repository.js';
import type { Footprint } from './erasure-find.js';
import { scrubJson } from './scrub.js';

type Tx = Prisma.TransactionClient;

/**
 * The erasure of the person's Partner records in rentbridge's tables (docs/privacy.md): the
 * changelog rows still in the outbox, the stored list reads, the versions and known states; the
 * records noted as erased (so nothing mirrors them back); a tombstone for each on its compacted
 * `partner.*` topic. In the caller's transaction.
 */

const RECORD_TOPICS = ['partner.customers', 'partner.enrollments', 'partner.applications'];

type RecordResource = 'customers' | 'enrollments' | 'applications';

/** The person's Partner records as (resource, id). */
function recordsOf(fp: Footprint): Array<[RecordResource, string]> {
  return [
    ...fp.customerIds.map((id) => ['customers', id] as [RecordResource, string]),
    ...fp.enrollmentIds.map((id) => ['enrollments', id] as [RecordResource, string]),
    ...fp.applicationIds.map((id) => ['applications', id] as [RecordResource, string]),
  ];
}

/**
 * Outbox rows about the person, by key or by the changelog's e-mail and customer indexes. Published
 * (or parked) rows are deleted: the relay is done with them. An unpublished changelog row is
 * deleted too (its record is erased); an unpublished command or outcome is kept (its command is
 * still on its way: pending).
 */
export async function eraseOutbox(tx: Tx, fp: Footprint): Promise<{ deleted: number; pending: number }> {
  const keys = [...fp.emailKeys, ...fp.customerIds, ...fp.enrollmentIds, ...fp.applicationIds];
  const lower = fp.email.toLowerCase();
  const rows = await tx.$queryRaw<{ id: bigint; topic: string; done: boolean }[]>`
    SELECT id, topic, (published_at IS NOT NULL OR parked_at IS NOT NULL) AS done FROM outbox
     WHERE key = ANY(${keys}::text[])
    UNION
    SELECT id, topic, (published_at IS NOT NULL OR parked_at IS NOT NULL) FROM outbox
     WHERE topic = 'partner.customers' AND lower(data->'record'->>'email') = ${lower}
    UNION
    SELECT id, topic, (published_at IS NOT NULL OR parked_at IS NOT NULL) FROM outbox
     WHERE topic = 'partner.enrollments' AND data->'record'->>'customer_id' = ANY(${fp.customerIds}::text[])
    UNION
    SELECT id, topic, (published_at IS NOT NULL OR parked_at IS NOT NULL) FROM outbox
     WHERE topic = 'partner.applications' AND data->'record'->>'customer_id' = ANY(${fp.customerIds}::text[])`;
  const gone = rows.filter((r) => r.done || r.topic.startsWith('partner.')).map((r) => r.id);
  if (gone.length > 0) await tx.$executeRaw`DELETE FROM outbox WHERE id = ANY(${gone}::bigint[])`;
  return { deleted: gone.length, pending: rows.length - gone.length };
}

/**
 * Validly signed events of an unknown type kept for their sender (`inbound.unrouted`) whose body
 * carries the e-mail: a published or parked row is deleted; one still to be published loses its
 * values (its body scrubbed, its prebuilt message dropped so the relay builds it from the scrubbed
 * body). A body has any shape, so no index can find the e-mail in it: the topic's rows are read by
 * their own index (few: they leave with the outbox's retention), never the whole outbox. Answers the
 * rows found (the copies the topic may still hold until its retention), deleted and scrubbed.
 */
export async function eraseUnrouted(
  tx: Tx,
  fp: Footprint,
): Promise<{ found: number; deleted: number; scrubbed: number }> {
  const pattern = `%${fp.email.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const rows = await tx.$queryRaw<{ id: bigint; data: unknown; done: boolean }[]>`
    SELECT id, data, (published_at IS NOT NULL OR parked_at IS NOT NULL) AS done FROM outbox
     WHERE topic = ${TOPICS.unrouted} AND lower(data::text) LIKE ${pattern}
     FOR UPDATE`;
  const gone = rows.filter((r) => r.done).map((r) => r.id);
  if (gone.length > 0) await tx.$executeRaw`DELETE FROM outbox WHERE id = ANY(${gone}::bigint[])`;
  const waiting = rows.filter((r) => !r.done);
  for (const r of waiting) {
    await tx.$executeRaw`
      UPDATE outbox SET data = ${JSON.stringify(scrubJson(r.data, fp.needles))}::jsonb, message_value = NULL
       WHERE id = ${r.id}`;
  }
  return { found: rows.length, deleted: gone.length, scrubbed: waiting.length };
}

/**
 * Stored list reads of the records: the record itself is dropped (the row may stay as the note of
 * a write, `wrote_at`); a row keyed by the e-mail (a registration's write) is deleted whole.
 */
export async function eraseSnapshots(tx: Tx, fp: Footprint): Promise<number> {
  const cleared = await tx.$executeRaw`
    UPDATE snapshot_reads SET record = NULL, asked_at = NULL, page = NULL, per_page = NULL
     WHERE record IS NOT NULL
       AND ((resource = 'customers' AND record_id = ANY(${fp.customerIds}::text[]))
            OR (resource = 'enrollments' AND record_id = ANY(${fp.enrollmentIds}::text[]))
            OR (resource = 'applications' AND record_id = ANY(${fp.applicationIds}::text[])))`;
  const byEmail = await tx.$executeRaw`
    DELETE FROM snapshot_reads
     WHERE (resource = 'customers' AND lower(record->>'email') = ${fp.email.toLowerCase()})
        OR (resource = 'customers' AND record_id = ANY(${fp.emailKeys}::text[]))`;
  return cleared + byEmail;
}

/** The dedupe's versions and the known state of the records: ids and times, dropped with them. */
export async function eraseVersions(tx: Tx, fp: Footprint): Promise<{ versions: number; known: number }> {
  const records = recordsOf(fp);
  const resources = records.map((r) => r[0]);
  const ids = records.map((r) => r[1]);
  const versions = await tx.$executeRaw`
    DELETE FROM published_versions p USING unnest(${resources}::text[], ${ids}::text[]) AS v(resource, id)
     WHERE p.resource = v.resource AND p.record_id = v.id`;
  const known = await tx.$executeRaw`
    DELETE FROM known_records k USING unnest(${resources}::text[], ${ids}::text[]) AS v(resource, id)
     WHERE k.resource = v.resource AND k.record_id = v.id`;
  return { versions, known };
}

/**
 * What stays: the e-mail's digest and the records' ids (erased_people, erased_records); and a
 * tombstone per record on its changelog. Answers the tombstones per topic.
 */
export async function noteErased(tx: Tx, fp: Footprint): Promise<Map<string, number>> {
  await tx.$executeRaw`
    INSERT INTO erased_people (email_digest) VALUES (${fp.digest})
    ON CONFLICT (email_digest) DO UPDATE
      SET last_erased_at = now(), erasures = erased_people.erasures + 1`;
  const records = recordsOf(fp);
  if (records.length > 0) {
    await tx.$executeRaw`
      INSERT INTO erased_records (resource, record_id, email_digest)
      SELECT v.resource, v.id, ${fp.digest}
        FROM unnest(${records.map((r) => r[0])}::text[], ${records.map((r) => r[1])}::text[]) AS v(resource, id)
      ON CONFLICT (resource, record_id) DO NOTHING`;
  }
  await insertOutboxRows(
    tx,
    records.map(([resource, id]) =>
      tombstone({ topic: TOPICS.partner(resource), key: id, type: '', source: '/erasure', data: {} }),
    ),
  );
  const perTopic = new Map<string, number>(RECORD_TOPICS.map((t) => [t, 0]));
  for (const [resource] of records)
    perTopic.set(TOPICS.partner(resource), (perTopic.get(TOPICS.partner(resource)) ?? 0) + 1);
  return perTopic;
}
