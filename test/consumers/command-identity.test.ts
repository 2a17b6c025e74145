import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { applicationDecisions } from '../../src/command-types/application-decisions/application-decisions.js';
import { customerRegistrations } from '../../src/command-types/customer-registrations/customer-registrations.js';
import { enrollments } from '../../src/command-types/enrollments/enrollments.js';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import { searchDeadLetters } from '../../src/dead-letters/dead-letter-repository.js';
import { redriveDeadLetter } from '../../src/dead-letters/redrive.js';
import { commandOutcomeSchema, type CommandOutcome } from '../../src/contracts/outcomes.js';
import { REQUEST_ID_PATTERN } from '../../src/http/request-id.js';
import { createLogger } from '../../src/logger.js';
import { traceId } from '../../src/event-trace/trace.js';
import { routePmsEvent } from '../../src/receiver/route-event.js';
import { buildSecret, send, type TestReceiver } from '../receiver/webhooks.js';
import { useApp } from '../support/app.js';
import { ajvErrors, loadContracts, type Contracts } from '../support/contracts.js';
import { headersOf, uid, type Harness, type Received } from './support/harness.js';

/**
 * Issue 35: a command is its source, its type and its own id. Tried as PMSs that number their
 * decisions and payments apart would: everything arrives as signed webhooks from two sources,
 * goes through the receiver, the outbox and the relay, and is applied by the consumers against
 * the sandbox, whose ledger is the truth of what was written.
 */

const REPORT = (enrollment: string | number) =>
  `/partner/v1/enrollments/${enrollment}/report_rental_payments`;
const APPROVE = (application: string | number) => `/partner/v1/applications/${application}/approve`;
const CREATE_CUSTOMER = '/v1/partners/customers';
const CREATE_ENROLLMENT = '/partner/v1/enrollments';

const secrets = { acme: buildSecret(), beta: buildSecret() };
type Source = keyof typeof secrets;

describe('command identity: source + command type + command id', () => {
  let contracts: Contracts;
  beforeAll(async () => {
    contracts = await loadContracts();
  });
  const app = useApp({
    harness: true,
    consumers: [applicationDecisions, rentalPayments, customerRegistrations, enrollments],
    receiver: { partnerSecrets: [], pmsSecrets: { acme: [secrets.acme], beta: [secrets.beta] } },
    relay: {},
  });
  let h: Harness;
  let receiver: TestReceiver;
  beforeAll(() => ({ harness: h, receiver } = app));

  async function webhook(source: Source, type: string, data: Record<string, unknown>) {
    const res = await send(
      receiver.url,
      `/webhooks/pms/${source}`,
      { type, data },
      { secret: secrets[source] },
    );
    expect(res.status).toBe(202);
    return res.webhookId;
  }

  const is =
    (source: string, commandType: string, commandId: string) =>
    (r: Received): boolean => {
      const h = headersOf(r.message.headers);
      return (
        h['command-id'] === commandId && h['command-source'] === source && h['command-type'] === commandType
      );
    };

  /** The outcomes of one identity, once `count` are there; each is checked against the published schema. */
  async function outcomes(source: string, commandType: string, commandId: string, count = 1) {
    const hits = await h.received.waitFor(
      (r) => r.topic.startsWith('outcomes.') && is(source, commandType, commandId)(r),
      count,
    );
    return hits.map((r) => {
      const event = JSON.parse(r.message.value!.toString()) as {
        id: string;
        type: string;
        commandsource: string;
        commandtype: string;
        data: CommandOutcome;
      };
      expect(event.commandsource).toBe(source);
      expect(event.commandtype).toBe(commandType);
      // As a back-office holds it: docs/schemas/command-outcome.json and its docs/asyncapi.yaml channel.
      const schema = contracts.schema('command-outcome');
      expect(schema(event.data), ajvErrors(schema)).toBe(true);
      const channel = contracts.channels.get(r.topic)?.get(event.type);
      expect(channel, `no ${event.type} on ${r.topic} in docs/asyncapi.yaml`).toBeDefined();
      expect(channel!(event), ajvErrors(channel!)).toBe(true);
      return { id: event.id, ...commandOutcomeSchema.parse(event.data) };
    });
  }

  async function enrollment(): Promise<string> {
    const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
    return String(record!.id);
  }

  async function appliedWrites(path: string) {
    return (await h.control.ledger()).writes.filter((w) => w.path === path && w.applied);
  }

  describe('when two PMSs number decisions and payments apart (the five steps of the issue)', () => {
    it('writes each command once, refuses the conflicting one, and every outcome names its own target and source', async () => {
      const [application] = await h.control.addRecords('applications', [{ status: 'submitted' }]);
      const A = String(application!.id);
      const [E1, E2] = [await enrollment(), await enrollment()];
      const payment = (enrollment_id: string, amount_cents = 125_000) => ({
        payment_id: '42',
        enrollment_id,
        amount_cents,
        paid_on: '2026-11-01',
        period: '2026-11',
      });

      // 1. acme: decision 42, approve A.
      const w1 = await webhook('acme', 'application.decided', {
        decision_id: '42',
        application_id: A,
        decision: 'approve',
      });
      const [decided] = await outcomes('acme', 'application_decision', '42');
      expect(decided).toMatchObject({ status: 'applied', target_id: A, command_source: 'acme' });

      // 2. acme: payment 42, enrollment E1.
      const w2 = await webhook('acme', 'rent_payment.received', payment(E1));
      const [acmePaid] = await outcomes('acme', 'rental_payment', '42');
      expect(acmePaid).toMatchObject({ status: 'applied', target_id: E1, command_source: 'acme' });

      // 3. beta: payment 42, enrollment E2.
      const w3 = await webhook('beta', 'rent_payment.received', payment(E2));
      const [betaPaid] = await outcomes('beta', 'rental_payment', '42');
      expect(betaPaid).toMatchObject({ status: 'applied', target_id: E2, command_source: 'beta' });

      // 4. acme: payment 42 again, the same body under a new webhook id (a PMS retry).
      const w4 = await webhook('acme', 'rent_payment.received', payment(E1));
      const again = await outcomes('acme', 'rental_payment', '42', 2);
      expect(again[1]).toEqual(again[0]); // the same outcome, the same CloudEvent id

      // 5. acme: payment 42, same enrollment, another amount: a conflict, never taken for step 2.
      // The receiver has the first in PostgreSQL: it says so at once (409), stores nothing...
      const known = await send(
        receiver.url,
        '/webhooks/pms/acme',
        { type: 'rent_payment.received', data: payment(E1, 99_900) },
        { secret: secrets.acme },
      );
      expect(known.status).toBe(409);
      expect(known.json.error).toMatchObject({ code: 'conflicting_duplicate', command_id: '42' });
      // ...and where it cannot know (the first still on its way, moments apart), the copy is
      // stored as the receiver stores any, and the consumer refuses it.
      const w5 = `msg_${randomUUID()}`;
      await receiver.writer.write(
        routePmsEvent({
          source: 'pms:acme',
          path: '/webhooks/pms/acme',
          webhookId: w5,
          requestId: `req-${randomUUID()}`,
          body: { type: 'rent_payment.received', data: payment(E1, 99_900) },
        }),
      );
      const all = await outcomes('acme', 'rental_payment', '42', 3);
      const refused = all[2]!;
      expect(refused).toMatchObject({
        status: 'rejected',
        target_id: E1,
        command_source: 'acme',
        attempts: 0,
        partner_request_ids: [],
        error: { code: 'conflicting_duplicate' },
        conflicts_with: { target_id: E1, status: 'applied' },
      });
      expect(refused.id).not.toBe(all[0]!.id); // a back-office deduping on the id keeps both
      expect(refused.error!.message).toContain('acme rental_payment "42"');
      const dead = headersOf(
        (
          await h.received.waitFor(
            (r) =>
              r.topic.endsWith('.dlq') &&
              headersOf(r.message.headers)['dlq-command-id'] === '42' &&
              headersOf(r.message.headers)['dlq-command-source'] === 'acme',
          )
        )[0]!.message.headers,
      );
      expect(dead).toMatchObject({
        'dlq-reason': 'conflicting_duplicate',
        'dlq-command-type': 'rental_payment',
        'dlq-error-code': 'conflicting_duplicate',
      });
      expect(dead['dlq-error-message']).toMatch(/target .*; this one \(target/);

      // The ledger: one write for each of steps 1-3, none for 4 and 5.
      const approves = await appliedWrites(APPROVE(A));
      const reportsE1 = await appliedWrites(REPORT(E1));
      const reportsE2 = await appliedWrites(REPORT(E2));
      expect([approves.length, reportsE1.length, reportsE2.length]).toEqual([1, 1, 1]);
      expect(
        (reportsE1[0]!.body as { rental_payments: Array<{ amount_cents: number }> }).rental_payments,
      ).toEqual([expect.objectContaining({ amount_cents: 125_000 })]);
      // Three commands, three request ids: legal under spec 7.3 and none shared.
      const ids = [approves[0]!.request_id, reportsE1[0]!.request_id, reportsE2[0]!.request_id];
      expect(new Set(ids).size).toBe(3);
      for (const id of ids) expect(id).toMatch(REQUEST_ID_PATTERN);
      expect(ids[0]).toBe('42.a1'); // the first keeps its id unchanged, as before identities
      expect([decided, acmePaid, betaPaid].map((o) => o!.partner_request_ids[0])).toEqual(ids);
      // Every call of the three (snapshot reads made before a row exists included) has a request
      // id of its own identity: none is shared, so the partner's logs tell the three apart.
      const { rows: calls } = await h.database.sql.query<{ identity: string; request_id: string }>(
        `SELECT DISTINCT source || '/' || command_type AS identity, request_id FROM command_attempts
          WHERE command_id = '42' AND kind <> 'outcome' AND request_id <> ''`,
      );
      expect(new Set(calls.map((c) => c.identity))).toEqual(
        new Set(['acme/application_decision', 'acme/rental_payment', 'beta/rental_payment']),
      );
      const owners = new Map<string, Set<string>>();
      for (const c of calls)
        owners.set(c.request_id, (owners.get(c.request_id) ?? new Set()).add(c.identity));
      expect(
        [...owners].filter(([, of]) => of.size > 1).map(([id, of]) => `${id}: ${[...of].join(', ')}`),
      ).toEqual([]);
      for (const c of calls) expect(c.request_id).toMatch(REQUEST_ID_PATTERN);

      // trace: "42" names three commands, so it lists them; a request id names one.
      const options = { topicPrefix: h.kafka.prefix, retentionHours: 72 };
      const ambiguous = await traceId(h.database.db, '42', options);
      expect(ambiguous.candidates?.map((c) => `${c.source}/${c.commandType}`).sort()).toEqual([
        'acme/application_decision',
        'acme/rental_payment',
        'beta/rental_payment',
      ]);
      const one = await traceId(h.database.db, ids[2]!, options);
      expect(one.candidates).toBeUndefined();
      expect(one.steps.filter((s) => s.stage === 'command').map((s) => s.details.source)).toEqual(['beta']);
      const scoped = await traceId(h.database.db, '42', {
        ...options,
        source: 'acme',
        commandType: 'rental_payment',
      });
      expect(scoped.steps.filter((s) => s.stage === 'command').map((s) => s.details.targetId)).toEqual([E1]);
      // ...and only its own trail: the webhooks of steps 2, 4 and 5 (the refused one is this
      // identity's too), never acme's decision's nor beta's payment's.
      const webhooksOf = (t: { steps: Array<{ stage: string; details: Record<string, unknown> }> }) =>
        t.steps
          .filter((s) => s.stage === 'webhook')
          .map((s) => s.details.webhookId)
          .sort();
      expect(webhooksOf(scoped)).toEqual([w2, w4, w5].sort());
      const decisionOnly = await traceId(h.database.db, '42', {
        ...options,
        source: 'acme',
        commandType: 'application_decision',
      });
      expect(webhooksOf(decisionOnly)).toEqual([w1]);
      expect(decisionOnly.steps.filter((s) => s.stage === 'outbox')).toHaveLength(1);
      // By beta's webhook id: beta's payment alone, not the two other commands numbered 42.
      const byWebhook = await traceId(h.database.db, w3, options);
      expect(byWebhook.candidates).toBeUndefined();
      expect(
        byWebhook.steps
          .filter((s) => s.stage === 'command')
          .map((s) => [s.details.source, s.details.targetId]),
      ).toEqual([['beta', E2]]);
      expect(webhooksOf(byWebhook)).toEqual([w3]);
      expect(byWebhook.ends.join('\n')).not.toContain('acme');
    });
  });

  describe('when one source uses the same id for all four command types', () => {
    it('applies each once, each outcome naming its own type and target', async () => {
      const id = uid('same');
      const [application] = await h.control.addRecords('applications', [{ status: 'submitted' }]);
      const E = await enrollment();
      const [customer] = await h.control.addRecords('customers', [
        { first_name: 'B', last_name: 'C', email: `${uid('c')}@example.com`, phone: '5550000003' },
      ]);
      const email = `${uid('r')}@example.com`;
      await webhook('acme', 'application.decided', {
        decision_id: id,
        application_id: String(application!.id),
        decision: 'approve',
      });
      await webhook('acme', 'rent_payment.received', {
        payment_id: id,
        enrollment_id: E,
        amount_cents: 5_000,
        paid_on: '2026-11-02',
      });
      await webhook('acme', 'customer.registration_requested', {
        registration_id: id,
        pms_reference: 'tenant-1',
        first_name: 'Ada',
        last_name: 'Lovelace',
        email,
        phone: '5551234567',
      });
      await webhook('acme', 'enrollment.requested', {
        enrollment_request_id: id,
        customer_id: String(customer!.id),
      });

      const got = {
        decision: (await outcomes('acme', 'application_decision', id))[0]!,
        payment: (await outcomes('acme', 'rental_payment', id))[0]!,
        registration: (await outcomes('acme', 'customer_registration', id))[0]!,
        enrollment: (await outcomes('acme', 'enrollment', id))[0]!,
      };
      expect(got.decision).toMatchObject({ status: 'applied', target_id: String(application!.id) });
      expect(got.payment).toMatchObject({ status: 'applied', target_id: E });
      expect(got.registration).toMatchObject({ status: 'applied', target_id: email });
      expect(got.enrollment).toMatchObject({ status: 'applied', target_id: String(customer!.id) });
      expect(new Set(Object.values(got).map((o) => o.id)).size).toBe(4);

      expect(await appliedWrites(APPROVE(application!.id))).toHaveLength(1);
      expect(await appliedWrites(REPORT(E))).toHaveLength(1);
      const ledger = (await h.control.ledger()).writes.filter((w) => w.applied);
      expect(
        ledger.filter((w) => w.path === CREATE_CUSTOMER && (w.body as { email?: string }).email === email),
      ).toHaveLength(1);
      expect(
        ledger.filter(
          (w) =>
            w.path === CREATE_ENROLLMENT &&
            String((w.body as { customer_id?: unknown }).customer_id) === String(customer!.id),
        ),
      ).toHaveLength(1);
      const writeIds = Object.values(got).flatMap((o) => o.partner_request_ids);
      expect(new Set(writeIds).size).toBe(4);
    });
  });

  describe('when a PMS id is any text (issue 27, item 1)', () => {
    it('takes 255 non-ASCII characters with "/", "#" and spaces to an applied outcome with a valid X-Request-Id', async () => {
      const E = await enrollment();
      const id = `pms:7f3/zahlung #${'ü'.repeat(200)} für Wohnung ${'ß'.repeat(255)}`.slice(0, 255);
      expect([...id]).toHaveLength(255);
      await webhook('beta', 'rent_payment.received', {
        payment_id: id,
        enrollment_id: E,
        amount_cents: 7_000,
        paid_on: '2026-11-03',
      });
      const [outcome] = await outcomes('beta', 'rental_payment', id);
      expect(outcome).toMatchObject({ status: 'applied', command_id: id, target_id: E });
      const [write] = await appliedWrites(REPORT(E));
      expect(write!.request_id).toMatch(REQUEST_ID_PATTERN);
      expect(outcome!.partner_request_ids).toEqual([write!.request_id]);
      // The request id ties back to the command.
      const trace = await traceId(h.database.db, write!.request_id, {
        topicPrefix: h.kafka.prefix,
        retentionHours: 72,
      });
      expect(trace.steps.find((s) => s.stage === 'command')?.details.commandId).toBe(id);
    });

    it('refuses a control character in a command id with 422, naming the field', async () => {
      const res = await send(
        receiver.url,
        '/webhooks/pms/acme',
        {
          type: 'rent_payment.received',
          data: { payment_id: 'pay\u0007bell', enrollment_id: 'e-1', amount_cents: 1, paid_on: '2026-11-01' },
        },
        { secret: secrets.acme },
      );
      expect(res.status).toBe(422);
      expect(JSON.stringify(res.json)).toContain('payment_id');
    });
  });

  describe('when a dead letter shares its id with another source’s applied command', () => {
    it('redrives the right one: its own guard row, never closed as the other’s', async () => {
      const id = uid('shared');
      const [E1, E2] = [await enrollment(), await enrollment()];
      // acme's report is refused once (a 4xx: rejected, dead-lettered); beta's is applied.
      await h.control.addFault({ method: 'POST', path: REPORT(E1), kind: 'error', status: 422, times: 1 });
      await webhook('acme', 'rent_payment.received', {
        payment_id: id,
        enrollment_id: E1,
        amount_cents: 1_000,
        paid_on: '2026-11-04',
      });
      expect((await outcomes('acme', 'rental_payment', id))[0]).toMatchObject({ status: 'rejected' });
      await webhook('beta', 'rent_payment.received', {
        payment_id: id,
        enrollment_id: E2,
        amount_cents: 2_000,
        paid_on: '2026-11-04',
      });
      expect((await outcomes('beta', 'rental_payment', id))[0]).toMatchObject({ status: 'applied' });

      // The indexer is not running here: index acme's letter from what the consumer published.
      const [dlq] = await h.received.waitFor(
        (r) =>
          r.topic.endsWith('.dlq') &&
          headersOf(r.message.headers)['dlq-command-id'] === id &&
          headersOf(r.message.headers)['dlq-command-source'] === 'acme',
      );
      const { insertDeadLetter } = await import('../../src/dead-letters/dead-letter-repository.js');
      const { fromDeadLetterHeaders } = await import('../../src/dead-letters/dead-letter-headers.js');
      const parsed = fromDeadLetterHeaders(dlq!.message.headers);
      await insertDeadLetter(h.database.db, {
        dlqTopic: `${h.kafka.prefix}${dlq!.topic}`,
        partition: dlq!.partition,
        offset: dlq!.message.offset,
        key: dlq!.message.key?.toString() ?? null,
        value: dlq!.message.value!.toString(),
        headers: parsed.all,
        info: parsed,
      });
      const [letter] = await searchDeadLetters(h.database.db, {
        commandId: id,
        source: 'acme',
        state: 'open',
      });
      expect(letter).toMatchObject({ commandSource: 'acme', commandType: 'rental_payment' });
      expect(await searchDeadLetters(h.database.db, { commandId: id, source: 'beta', state: 'all' })).toEqual(
        [],
      );

      const outcome = await redriveDeadLetter(
        {
          db: h.database.db,
          producer: h.producer,
          topicPrefix: h.kafka.prefix,
          logger: createLogger({ level: 'silent' }),
        },
        letter!.id,
        { actor: 'ops' },
      );
      expect(outcome).toMatchObject({
        action: 'send',
        guardState: 'rejected',
        guardReset: true,
        command: { source: 'acme', commandType: 'rental_payment', commandId: id },
      });
      const after = await outcomes('acme', 'rental_payment', id, 2);
      expect(after[1]).toMatchObject({ status: 'applied', target_id: E1 });
      expect(await appliedWrites(REPORT(E1))).toHaveLength(1);
      expect(await appliedWrites(REPORT(E2))).toHaveLength(1);
    });
  });
});
