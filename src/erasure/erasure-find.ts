import type { Prisma } from '@prisma/client';
import { isFinal } from '../guard/machine/command-record.js';
import { emailDigest } from '../privacy/erased-records.js';
import { needlesOf, personalValuesOf, type Needles } from './scrub.js';

type Tx = Prisma.TransactionClient;

/** One of the person's commands, by its identity. */
export interface PersonCommand {
  source: string;
  commandType: string;
  commandId: string;
  state: string;
  final: boolean;
}

/**
 * What rentbridge holds about one person, found from the e-mail by index (never a scan): the
 * customer records that carry it (stored list reads, changelog rows still in the outbox,
 * registrations' outcomes, and the ids an earlier erasure recorded), the enrollments of those
 * customers, their applications, and every command about the e-mail, the customers, the enrollments
 * or the applications.
 */
export interface Footprint {
  email: string;
  digest: string;
  /** What replaces the e-mail where it was an id (a registration's target, a Kafka key). */
  standIn: string;
  /** The e-mail as given and lower-cased, and the stand-in: the keys rows are found by. */
  emailKeys: string[];
  customerIds: string[];
  enrollmentIds: string[];
  /** The customers' applications (an application names its applicant by `customer_id`). */
  applicationIds: string[];
  commands: PersonCommand[];
  needles: Needles;
}

const ids = (rows: { id: unknown }[]) =>
  rows
    .map((r) => r.id)
    .filter((v) => v != null)
    .map(String);

export async function findFootprint(tx: Tx, email: string): Promise<Footprint> {
  const lower = email.trim().toLowerCase();
  const digest = emailDigest(email);
  const standIn = `erased:${digest.slice(0, 32)}`;
  const emailKeys = [...new Set([email.trim(), lower, standIn])];
  const values = new Set<string>();

  const prior = await tx.$queryRaw<{ resource: string; id: string }[]>`
    SELECT resource, record_id AS id FROM erased_records WHERE email_digest = ${digest}`;
  const registrations = await commandsOf(tx, 'customer_registration', emailKeys);
  const customers = new Set([
    ...prior.filter((r) => r.resource === 'customers').map((r) => r.id),
    ...ids(
      await tx.$queryRaw<{ id: string; record: unknown }[]>`
        SELECT record_id AS id, record FROM snapshot_reads
         WHERE resource = 'customers' AND lower(record->>'email') = ${lower}`.then((rows) => {
        rows.forEach((r) => personalValuesOf(r.record, values));
        return rows;
      }),
    ),
    ...ids(
      await tx.$queryRaw<{ id: string; record: unknown }[]>`
        SELECT key AS id, data->'record' AS record FROM outbox
         WHERE topic = 'partner.customers' AND lower(data->'record'->>'email') = ${lower}`.then((rows) => {
        rows.forEach((r) => personalValuesOf(r.record, values));
        return rows;
      }),
    ),
    ...registrations.flatMap((c) => outcomeIds(c.outcome, ['partner_customer_id', 'existing_customer_id'])),
  ]);
  registrations.forEach((c) => personalValuesOf(c.payload, values));
  const customerIds = [...customers];

  const enrollmentCommands = await commandsOf(tx, 'enrollment', customerIds);
  const enrollments = new Set([
    ...prior.filter((r) => r.resource === 'enrollments').map((r) => r.id),
    ...ids(
      await tx.$queryRaw<{ id: string }[]>`
        SELECT record_id AS id FROM snapshot_reads
         WHERE resource = 'enrollments' AND record->>'customer_id' = ANY(${customerIds}::text[])`,
    ),
    ...ids(
      await tx.$queryRaw<{ id: string }[]>`
        SELECT key AS id FROM outbox
         WHERE topic = 'partner.enrollments' AND data->'record'->>'customer_id' = ANY(${customerIds}::text[])`,
    ),
    ...enrollmentCommands.flatMap((c) =>
      outcomeIds(c.outcome, ['partner_enrollment_id', 'existing_enrollment_id']),
    ),
  ]);
  const enrollmentIds = [...enrollments];
  const payments = await commandsOf(tx, 'rental_payment', enrollmentIds);

  // Applications name their applicant by customer_id (spec 4.3, the sandbox): the stored list
  // reads and changelog rows of the customers' applications, and the ids an earlier erasure kept.
  const applicationIds = [
    ...new Set([
      ...prior.filter((r) => r.resource === 'applications').map((r) => r.id),
      ...ids(
        await tx.$queryRaw<{ id: string }[]>`
          SELECT record_id AS id FROM snapshot_reads
           WHERE resource = 'applications' AND record->>'customer_id' = ANY(${customerIds}::text[])`,
      ),
      ...ids(
        await tx.$queryRaw<{ id: string }[]>`
          SELECT key AS id FROM outbox
           WHERE topic = 'partner.applications' AND data->'record'->>'customer_id' = ANY(${customerIds}::text[])`,
      ),
    ]),
  ];
  const decisions = await commandsOf(tx, 'application_decision', applicationIds);

  const commands = [...registrations, ...enrollmentCommands, ...payments, ...decisions].map((c) => ({
    source: c.source,
    commandType: c.command_type,
    commandId: c.command_id,
    state: c.state,
    final: isFinal(c.state),
  }));
  return {
    email: email.trim(),
    digest,
    standIn,
    emailKeys,
    customerIds,
    enrollmentIds,
    applicationIds,
    commands,
    needles: needlesOf(lower, values),
  };
}

interface CommandRow {
  source: string;
  command_type: string;
  command_id: string;
  state: string;
  payload: unknown;
  outcome: unknown;
}

/** The commands of one type about any of the targets: by the (command_type, target_id) index. */
async function commandsOf(tx: Tx, commandType: string, targets: string[]): Promise<CommandRow[]> {
  if (targets.length === 0) return [];
  return tx.$queryRaw<CommandRow[]>`
    SELECT source, command_type, command_id, state, payload, outcome FROM commands
     WHERE command_type = ${commandType} AND target_id = ANY(${targets}::text[])`;
}

/** The Partner ids an outcome names (the customer a registration made or found...). */
function outcomeIds(outcome: unknown, fields: string[]): string[] {
  if (outcome === null || typeof outcome !== 'object') return [];
  const o = outcome as Record<string, unknown>;
  const data = (o.data && typeof o.data === 'object' ? o.data : o) as Record<string, unknown>;
  return fields
    .map((f) => data[f] ?? o[f])
    .filter((v) => v != null && v !== '')
    .map(String);
}
