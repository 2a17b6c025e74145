import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { appendAudit } from '../../src/audit/audit-chain.js';
import { verifyAuditChain } from '../../src/audit/audit-verify.js';
import { recordChanges } from '../../src/changes/record-changes.js';
import { applicationDecisions } from '../../src/command-types/application-decisions/application-decisions.js';
import { customerRegistrations } from '../../src/command-types/customer-registrations/customer-registrations.js';
import { enrollments } from '../../src/command-types/enrollments/enrollments.js';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { erasePerson } from '../../src/erasure/erase-person.js';
import { defaultTopicSettings } from '../../src/kafka/topic-settings.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { emailDigest } from '../../src/privacy/erased-records.js';
import { writeResyncPage, resetPosition } from '../../src/resync/resync-repository.js';
import { createLogger } from '../../src/logger.js';
import { createPoller, createRequestCounter } from '../../src/poller/index.js';
import { uid } from '../consumers/support/harness.js';
import { drainOutbox, useHarness } from '../support/app.js';

/**
 * Erasure on request (issue 51, docs/privacy.md): a canary person through the paths that carry
 * personal data, then erased; every column of every table scanned for the canary's values.
 */

/** A person no other test data can contain by chance. */
function buildCanary() {
  const tag = randomBytes(3).toString('hex');
  return {
    first_name: `Zephyrine${tag}`,
    last_name: `Quillfeather${tag}`,
    email: `Zephyrine.Q.${tag}@canary-erase.example`,
    phone: `555019${parseInt(tag, 16) % 100000}`.padEnd(11, '7'),
  };
}

/** Column values holding a canary value whole (case-insensitive), per table, over every column of every table of the schema. */
async function canaryHits(sql: pg.Pool, schema: string, values: string[]): Promise<Record<string, number>> {
  const { rows: columns } = await sql.query<{ table_name: string; column_name: string; data_type: string }>(
    `SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE'`,
    [schema],
  );
  const patterns = values.map((v) => `%${v.toLowerCase()}%`);
  const hits: Record<string, number> = {};
  for (const c of columns) {
    const column = `"${c.column_name}"`;
    const text = c.data_type === 'bytea' ? `encode(${column}, 'escape')` : `${column}::text`;
    const { rows } = await sql.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${c.table_name}" WHERE lower(${text}) LIKE ANY($1::text[])`,
      [patterns],
    );
    const n = Number(rows[0]!.n);
    if (n > 0) hits[c.table_name] = (hits[c.table_name] ?? 0) + n;
  }
  return hits;
}

describe('rentbridge erase', () => {
  const h = useHarness([customerRegistrations, enrollments, rentalPayments, applicationDecisions]);
  const canary = buildCanary();
  const values = () => [canary.email, canary.first_name, canary.last_name, canary.phone];
  const topics = defaultTopicSettings(3);
  let customerId = '';
  let enrollmentId = '';
  let applicationId = '';
  let decisionId = '';

  async function command(topic: string, key: string, type: string, id: string, data: object) {
    await h.publish(topic, key, JSON.stringify(toCloudEvent({ id, source: '/test', type, data })));
    return h.outcomesOf(id);
  }

  it('follows the canary through registration, enrollment, payment, dead letter, callback, reconciliation, snapshot and changelog', async () => {
    await h.kafka.createTopics([
      TOPICS.partner('customers'),
      TOPICS.partner('enrollments'),
      TOPICS.partner('applications'),
      TOPICS.unrouted,
    ]);
    const registrationId = uid('reg');
    const [registered] = await command(
      TOPICS.customerRegistrations,
      canary.email.toLowerCase(),
      COMMAND_TYPES.customerRegistration,
      registrationId,
      { registration_id: registrationId, pms_reference: uid('tenant'), ...canary },
    );
    expect(registered).toMatchObject({ status: 'applied' });
    customerId = String((registered as { partner_customer_id: string }).partner_customer_id);
    const enrollmentRequestId = uid('enr');
    const [enrolled] = await command(
      TOPICS.enrollments,
      customerId,
      COMMAND_TYPES.enrollment,
      enrollmentRequestId,
      { enrollment_request_id: enrollmentRequestId, customer_id: customerId },
    );
    enrollmentId = String((enrolled as { partner_enrollment_id: string }).partner_enrollment_id);
    const paymentId = uid('pay');
    const [paid] = await h.outcomesOf(
      await h.payment({
        payment_id: paymentId,
        enrollment_id: enrollmentId,
        amount_cents: 125_000,
        paid_on: '2026-11-01',
        period: '2026-11',
      }),
    );
    expect(paid).toMatchObject({ status: 'applied' });

    // The person's application (it names its applicant by customer_id), decided by the PMS with a
    // reason that names the applicant.
    const [app] = await h.control.addRecords('applications', [
      { customer_id: Number(customerId), status: 'submitted' },
    ]);
    applicationId = String(app!.id);
    decisionId = await h.decision({
      decision_id: uid('dec'),
      application_id: Number(applicationId),
      decision: 'approve',
      reason: `references of ${canary.first_name} ${canary.last_name} checked`,
    });
    const [decided] = await h.outcomesOf(decisionId);
    expect(decided).toMatchObject({ status: 'applied' });

    // The platform's records as the webhook ingest writes them (the changelog), then on Kafka.
    const customer = (await h.control.records('customers')).find((c) => String(c.id) === customerId)!;
    const enrollment = (await h.control.records('enrollments')).find((e) => String(e.id) === enrollmentId)!;
    const application = (await h.control.records('applications')).find(
      (a) => String(a.id) === applicationId,
    )!;
    await h.database.db.$transaction((tx) =>
      recordChanges(tx, [
        { resource: 'customers', record: customer, via: 'webhook', source: '/webhooks/partner' },
        { resource: 'enrollments', record: enrollment, via: 'webhook', source: '/webhooks/partner' },
        { resource: 'applications', record: application, via: 'webhook', source: '/webhooks/partner' },
      ]),
    );
    await drainOutbox(h.database, h.kafka);
    // A validly signed event of a type rentbridge does not route, kept for its sender: published,
    // and one still waiting for the relay (written after the drain above).
    for (const n of [1, 2]) {
      await h.database.sql.query(
        `INSERT INTO outbox (event_id, topic, key, type, source, data, published_at)
         VALUES (gen_random_uuid(), 'inbound.unrouted', $1, 'rentbridge.inbound.unrouted', '/webhooks/partner', $2,
                 CASE WHEN $3 THEN now() END)`,
        [
          `wh-unrouted-${n}`,
          JSON.stringify({
            source: 'partner',
            webhook_id: `wh-unrouted-${n}`,
            received_type: 'partner.tenant.screened',
            payload: { applicant: { email: canary.email, last_name: canary.last_name } },
          }),
          n === 1,
        ],
      );
    }

    // A dead letter of a registration, its corrected redrive audited, an outcome callback, a
    // reconciliation item and a stored list read: as their writers keep them.
    const letter = JSON.stringify(
      toCloudEvent({
        id: 'reg-dead',
        source: '/test',
        type: COMMAND_TYPES.customerRegistration,
        data: { registration_id: registrationId, ...canary },
      }),
    );
    const { rows: dl } = await h.database.sql.query<{ id: string }>(
      `INSERT INTO dead_letters (dlq_topic, partition, "offset", key, value, headers, command_id, command_source,
                                 command_type, error_message, state)
       VALUES ('commands.customer-registrations.dlq', 0, '7', $1, $2, '{}', $3, '/test', 'customer_registration',
               $4, 'open') RETURNING id`,
      [canary.email.toLowerCase(), letter, registrationId, `Email ${canary.email} is already taken`],
    );
    await appendAudit(h.database.db, {
      actor: 'ops:alice',
      action: 'redrive',
      target: `dead_letter:${dl[0]!.id}`,
      details: { commandId: registrationId, original: letter, corrected: { ...canary } },
    });
    // The guard keeps the outcome on its row once it is on Kafka: the callback is made from it.
    await vi.waitFor(
      async () => {
        const { rows } = await h.database.sql.query(
          `SELECT 1 FROM commands WHERE command_id = $1 AND outcome IS NOT NULL`,
          [registrationId],
        );
        expect(rows).toHaveLength(1);
      },
      { timeout: 20_000, interval: 100 },
    );
    await h.database.sql.query(
      `INSERT INTO callback_deliveries (source, webhook_id, event_id, event_type, command_type, command_id,
                                        outcome_status, payload, state, delivered_at)
       SELECT source, 'msg-' || command_id, 'ev-' || command_id, 'rentbridge.outcome.customer-registration',
              command_type, command_id, state, outcome::text, 'delivered', now()
         FROM commands WHERE command_id = $1`,
      [registrationId],
    );
    await h.database.sql.query(
      `WITH run AS (INSERT INTO reconciliation_runs (trigger, since, until) VALUES ('cli', now(), now()) RETURNING id)
       INSERT INTO reconciliation_items (run_id, verdict, command_type, source, command_id, target_id, reason, evidence)
       SELECT run.id, 'confirmed', command_type, source, command_id, target_id, 'customer found', payload FROM run, commands
        WHERE command_id = $1`,
      [registrationId],
    );
    await h.database.sql.query(
      `INSERT INTO snapshot_reads (key_id, resource, record_id, record, asked_at)
       VALUES ('deployment', 'customers', $1, $2, now()) ON CONFLICT DO NOTHING`,
      [customerId, JSON.stringify(customer)],
    );
    await h.database.sql.query(
      `INSERT INTO snapshot_reads (key_id, resource, record_id, record, asked_at)
       VALUES ('deployment', 'applications', $1, $2, now()) ON CONFLICT DO NOTHING`,
      [applicationId, JSON.stringify(application)],
    );
    // Another source's audit entry with the same command id as the decision: not the person's.
    await appendAudit(h.database.db, {
      actor: 'ops:bob',
      action: 'redrive',
      target: 'dead_letter:999999',
      details: { commandId: decisionId, source: '/elsewhere', note: 'other source keeps this' },
    });
    await appendAudit(h.database.db, {
      actor: 'ops:bob',
      action: 'redrive',
      target: 'dead_letter:999998',
      details: { commandId: decisionId, source: '/test', note: "the person's decision" },
    });

    const before = await canaryHits(h.database.sql, h.database.schema, values());
    for (const table of ['commands', 'outbox', 'dead_letters', 'audit_log', 'callback_deliveries'])
      expect(before[table], table).toBeGreaterThan(0);
    expect(before.reconciliation_items).toBeGreaterThan(0);
    expect(before.snapshot_reads).toBeGreaterThan(0);
    console.log('canary column values per table before erasure:', before);
  }, 120_000);

  it('a dry run changes nothing and prints the same receipt as the erasure', async () => {
    const before = await canaryHits(h.database.sql, h.database.schema, values());
    const dry = await erasePerson(h.database.db, topics, {
      email: canary.email,
      dryRun: true,
      actor: 'test',
    });
    expect(await canaryHits(h.database.sql, h.database.schema, values())).toEqual(before);
    expect(dry).toMatchObject({ dry_run: true, customers: 1, enrollments: 1, applications: 1 });
    expect(dry.tables.commands).toBe(4);
    expect(dry.email_digest).toBe(emailDigest(canary.email));
    const { rows } = await h.database.sql.query(`SELECT count(*)::int AS n FROM erased_records`);
    expect(rows[0].n).toBe(0);
  });

  it('erases every value of the canary from every table, tombstones its records and keeps the audit chain whole', async () => {
    const receipt = await erasePerson(h.database.db, topics, {
      email: canary.email.toUpperCase(),
      dryRun: false,
      note: 'ticket 42',
      actor: 'test',
    });
    expect(receipt).toMatchObject({
      dry_run: false,
      customers: 1,
      enrollments: 1,
      applications: 1,
      pending: [],
    });
    expect(receipt.tables).toMatchObject({
      commands: 4,
      dead_letters: 1,
      callback_deliveries: 1,
      audit_log: 2,
    });
    expect(receipt.topics.find((t) => t.topic === 'partner.applications')).toMatchObject({ tombstones: 1 });
    expect(receipt.topics.find((t) => t.topic === 'inbound.unrouted')).toEqual({
      topic: 'inbound.unrouted',
      tombstones: 0,
      copies: 2,
      removed_by: new Date(Date.parse(receipt.at) + topics.unroutedRetentionMs).toISOString(),
    });
    // The published unrouted event is gone; the waiting one is still sent, without the values.
    const { rows: unrouted } = await h.database.sql.query(
      `SELECT key, data, message_value FROM outbox WHERE topic = 'inbound.unrouted' ORDER BY key`,
    );
    expect(unrouted).toMatchObject([{ key: 'wh-unrouted-2', message_value: null }]);
    expect(unrouted[0].data.payload.applicant).toEqual({ email: null, last_name: null });
    // Audit entries by (source, command id): the other source's entry keeps its details.
    const { rows: same } = await h.database.sql.query(
      `SELECT details->>'source' AS source, details, details_erased_at FROM audit_log
        WHERE target IN ('dead_letter:999999', 'dead_letter:999998') ORDER BY target`,
    );
    expect(same.map((a) => [a.details.source ?? null, a.details_erased_at === null])).toEqual([
      [null, false],
      ['/elsewhere', true],
    ]);
    const dlq = receipt.topics.find((t) => t.topic === 'commands.customer-registrations.dlq');
    expect(dlq?.removed_by).toBe(
      new Date(Date.parse(receipt.at) + topics.deadLetterRetentionMs).toISOString(),
    );
    expect(receipt.topics.find((t) => t.topic === 'partner.customers')).toMatchObject({ tombstones: 1 });

    const after = await canaryHits(h.database.sql, h.database.schema, values());
    console.log('canary column values per table after erasure:', after);
    expect(after).toEqual({});

    await drainOutbox(h.database, h.kafka);
    for (const [resource, id] of [
      ['customers', customerId],
      ['enrollments', enrollmentId],
      ['applications', applicationId],
    ] as const) {
      const messages = await h.kafka.readMessages(TOPICS.partner(resource), 2);
      const last = messages.filter((m) => m.key?.toString() === id).at(-1);
      expect(last?.value, `${resource} ${id} ends with a tombstone`).toBeNull();
    }

    const chain = await verifyAuditChain(h.database.db);
    expect(chain).toMatchObject({ ok: true, erased: 2, erasedLegacy: 0 });
    const { rows: audit } = await h.database.sql.query(
      `SELECT target, details FROM audit_log WHERE action = 'erase' ORDER BY id`,
    );
    expect(audit.map((a) => a.details.dry_run)).toEqual([true, false]);
    expect(audit[1].target).toBe(`email_digest:${emailDigest(canary.email)}`);
  }, 60_000);

  it('is not mirrored back by the poller, a platform webhook or resync, and a new command about the person is processed', async () => {
    // The platform still holds the person and changes it: the next poller pass reads it in full.
    await h.control.patchRecord('customers', Number(customerId), { phone: canary.phone });
    const poller = createPoller({
      partner: h.partner,
      db: h.database.db,
      databaseUrl: h.database.url,
      logger: createLogger({ level: 'silent' }),
      requestCounter: createRequestCounter(fetch),
    });
    try {
      await poller.runOnce('customers');
      await poller.runOnce('enrollments');
      await poller.runOnce('applications');
    } finally {
      await poller.stop();
    }
    const { rows: mirrored } = await h.database.sql.query(
      `SELECT topic, key FROM outbox WHERE topic LIKE 'partner.%' AND key = ANY($1) AND type <> 'rentbridge.tombstone'`,
      [[customerId, enrollmentId, applicationId]],
    );
    expect(mirrored).toEqual([]);
    expect(await canaryHits(h.database.sql, h.database.schema, values())).toEqual({});

    const customer = (await h.control.records('customers')).find((c) => String(c.id) === customerId)!;
    const changed = { ...customer, updated_at: new Date().toISOString() };
    for (const via of ['poll', 'webhook'] as const) {
      const [result] = await h.database.db.$transaction((tx) =>
        recordChanges(tx, [{ resource: 'customers', record: changed, via, source: `/${via}` }]),
      );
      expect(result).toEqual({ published: false });
    }
    const application = (await h.control.records('applications')).find(
      (a) => String(a.id) === applicationId,
    )!;
    const [appResult] = await h.database.db.$transaction((tx) =>
      recordChanges(tx, [
        {
          resource: 'applications',
          record: { ...application, updated_at: new Date().toISOString() },
          via: 'webhook',
          source: '/webhook',
        },
      ]),
    );
    expect(appResult).toEqual({ published: false });
    await resetPosition(h.database.db, 'customers');
    await writeResyncPage(h.database.db, 'customers', [{ ...changed, id: customerId }], {
      pagesDone: 1,
      records: 1,
    });
    expect(await canaryHits(h.database.sql, h.database.schema, values())).toEqual({});

    const registrationId = uid('reg');
    const [again] = await command(
      TOPICS.customerRegistrations,
      canary.email.toLowerCase(),
      COMMAND_TYPES.customerRegistration,
      registrationId,
      { registration_id: registrationId, pms_reference: uid('tenant'), ...canary },
    );
    expect(again).toMatchObject({ command_id: registrationId });
  }, 60_000);
});
