import { beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { customerRegistrations } from '../../src/command-types/customer-registrations/customer-registrations.js';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import { createSharedProducer } from '../../src/kafka/shared-producer.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { FAST_GUARD, logger, uid, type Harness } from '../consumers/support/harness.js';
import { buildSecret, send, type TestReceiver } from '../receiver/webhooks.js';
import { useApp } from '../support/app.js';
import { buildCanary, canaryValuesIn } from '../support/canary.js';
import { runCli } from '../support/cli.js';
import { reconcilerWith } from '../support/reconcile-seed.js';

/**
 * Issue 51, item 2: a canary person through the paths that carry personal data (a registration
 * webhook → command → dead letter → a corrected redrive → outcome; a payment webhook → outcome;
 * the traces of both; a reconciliation item), then what a viewer, an operator and an admin see
 * through the ops API and the CLI. Nobody sees a canary value whole without a reveal; a reveal is
 * the operator's or admin's, one item, with a reason, and its audit entry holds no value.
 */
const TOKEN = 'canary-break-glass-0123456789';
const secret = buildSecret();

describe('personal data of a canary person', () => {
  const app = useApp({
    harness: true,
    consumers: [customerRegistrations, rentalPayments],
    consumerOverrides: { guard: FAST_GUARD },
    receiver: { partnerSecrets: [], pmsSecrets: { acme: [secret] } },
    relay: {},
    ops: { opsToken: TOKEN },
    deadLetterIndexer: true,
  });
  const canary = buildCanary();
  let h: Harness;
  let receiver: TestReceiver;
  let api: string;
  const tokens: Record<'viewer' | 'operator' | 'admin', string> = { viewer: '', operator: '', admin: '' };
  let registrationId: string;
  let paymentId: string;
  let letterId: number;
  let runId: number;
  let itemId: number;

  const call = async (token: string, path: string, init: RequestInit = {}) => {
    const res = await fetch(`${api}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    });
    return { status: res.status, text: await res.text() };
  };
  const post = (token: string, path: string, body: unknown) =>
    call(token, path, { method: 'POST', body: JSON.stringify(body) });
  const cliEnv = () => ({
    DATABASE_URL: h.database.url,
    KAFKA_BROKERS: inject('kafkaBrokers'),
    KAFKA_TOPIC_PREFIX: h.kafka.prefix,
    LOG_FORMAT: 'json',
  });

  beforeAll(async () => {
    ({ harness: h, receiver } = app);
    api = `${app.base}/ops/api`;
    for (const role of ['viewer', 'operator', 'admin'] as const) {
      const created = await post(TOKEN, '/tokens', { name: `canary-${role}`, role });
      expect(created.status, created.text).toBe(201);
      tokens[role] = (JSON.parse(created.text) as { token: string }).token;
    }

    // A registration the check refuses (a phone of two digits): rejected, dead-lettered.
    registrationId = uid('reg');
    const registration = {
      registration_id: registrationId,
      pms_reference: `tenant-${registrationId}`,
      first_name: canary.first_name,
      last_name: canary.last_name,
      email: canary.email,
      phone: '12',
      check: true,
    };
    const hook = await send(
      receiver.url,
      '/webhooks/pms/acme',
      { type: 'customer.registration_requested', data: registration },
      { secret },
    );
    expect(hook.status).toBe(202);
    const [refused] = await h.outcomesOf(registrationId);
    expect(refused!.status).toBe('rejected');
    letterId = await vi.waitFor(
      async () => {
        const letter = await h.database.db.deadLetter.findFirst({ where: { commandId: registrationId } });
        expect(letter).not.toBeNull();
        return Number(letter!.id);
      },
      { timeout: 30_000, interval: 100 },
    );
    // The operator corrects the phone to the canary's and redrives: applied.
    const redriven = await post(tokens.operator, `/dead-letters/${letterId}/redrive`, {
      corrected_value: { ...registration, phone: canary.phone },
      reason: 'tenant called with the right phone',
    });
    expect(redriven.status, redriven.text).toBe(200);
    await h.received.waitFor(
      (r) =>
        r.topic === TOPICS.customerRegistrationOutcomes &&
        (JSON.parse(r.message.value!.toString()) as { data: { command_id?: string; status?: string } }).data
          .status === 'applied' &&
        r.message.value!.toString().includes(registrationId),
    );

    // A payment of the canary's amount and date.
    const [enrollment] = await h.control.addRecords('enrollments', [
      { status: 'active', rental_payments: [] },
    ]);
    paymentId = uid('pay');
    const paid = await send(
      receiver.url,
      '/webhooks/pms/acme',
      {
        type: 'rent_payment.received',
        data: {
          payment_id: paymentId,
          enrollment_id: Number(enrollment!.id),
          amount_cents: canary.amount_cents,
          paid_on: canary.paid_on,
          period: '2026-10',
        },
      },
      { secret },
    );
    expect(paid.status).toBe(202);
    const [applied] = await h.outcomesOf(paymentId);
    expect(applied!.status).toBe('applied');

    // A reconciliation pass over both: the registration's item has the canary's e-mail as target.
    await h.kafka.createTopics([TOPICS.reconciliationReports]);
    const producer = createSharedProducer(h.kafka.kafka);
    try {
      const now = Date.now();
      const { run, items } = await reconcilerWith({
        db: h.database.db,
        partner: h.partner,
        producer,
        logger,
        topicPrefix: h.kafka.prefix,
      }).run({ since: new Date(now - 3_600_000), until: new Date(now + 60_000) }, 'cli');
      runId = run.id;
      expect(items.map((i) => i.targetId)).toContain(canary.email.toLowerCase());
    } finally {
      await producer.close();
    }
    const item = await h.database.db.reconciliationItem.findFirst({
      where: { runId: BigInt(runId), commandId: registrationId },
    });
    itemId = Number(item!.id);
  });

  /** Every read of the ops API that shows the canary's paths. */
  const reads = () => [
    '/dead-letters?state=all',
    `/dead-letters/${letterId}`,
    `/trace/${registrationId}`,
    `/trace/${paymentId}`,
    `/reconciliation/runs/${runId}`,
    '/audit?limit=1000',
    '/callbacks',
  ];

  describe('when a viewer, an operator or an admin reads the ops API', () => {
    it('shows no canary value whole to any of them', async () => {
      for (const role of ['viewer', 'operator', 'admin'] as const) {
        for (const path of reads()) {
          const { status, text } = await call(tokens[role], path);
          expect(status, `${role} ${path}: ${text}`).toBe(200);
          expect(canaryValuesIn(canary, text), `${role} ${path}`).toEqual([]);
        }
      }
      // Masked, not removed: the shapes say what is there.
      const { text } = await call(tokens.viewer, `/dead-letters/${letterId}`);
      expect(text).toContain('z•••@c•••.example');
      expect(text).toContain('Z.');
      expect(text).toContain('••••••5309');
    });
  });

  describe('when a viewer asks for a reveal or searches by a personal value', () => {
    it('answers 403 forbidden in the error envelope', async () => {
      const reveal = await post(tokens.viewer, '/reveal', {
        kind: 'dead_letter',
        id: letterId,
        reason: 'just curious',
      });
      expect(reveal.status).toBe(403);
      expect(JSON.parse(reveal.text)).toMatchObject({
        error: { code: 'forbidden', role_needed: 'operator' },
      });
      const search = await call(tokens.viewer, `/trace/${encodeURIComponent(canary.email)}`);
      expect(search.status).toBe(403);
      expect(JSON.parse(search.text)).toMatchObject({ error: { code: 'forbidden' } });
      expect(canaryValuesIn(canary, reveal.text + search.text)).toEqual([]);
    });
  });

  describe('when an operator reveals one item with a reason', () => {
    it('answers it unmasked and audits the item and the reason, never a value', async () => {
      const letter = await post(tokens.operator, '/reveal', {
        kind: 'dead_letter',
        id: letterId,
        reason: 'ticket 4711: tenant asks',
      });
      expect(letter.status, letter.text).toBe(200);
      expect(letter.text).toContain(canary.email);
      expect(letter.text).toContain(canary.phone);
      expect(letter.text).toContain(canary.last_name);

      const item = await post(tokens.admin, '/reveal', {
        kind: 'reconciliation_item',
        id: itemId,
        reason: 'ticket 4712: drift check',
      });
      expect(item.status, item.text).toBe(200);
      expect(item.text).toContain(canary.email.toLowerCase());

      // A trace by the e-mail is a search by a personal value: a reveal, by the e-mail's digest.
      const byEmail = await post(tokens.operator, '/reveal', {
        kind: 'trace',
        id: canary.email,
        reason: 'ticket 4713: where is it',
      });
      expect(byEmail.status, byEmail.text).toBe(200);
      expect(byEmail.text).toContain(registrationId);

      const missing = await post(tokens.operator, '/reveal', { kind: 'dead_letter', id: letterId });
      expect(missing.status).toBe(400);

      const { rows } = await h.database.sql.query<{ actor: string; target: string; reason: string }>(
        `SELECT actor, target, reason, details::text AS details FROM audit_log WHERE action = 'reveal' ORDER BY id`,
      );
      expect(rows.map((r) => [r.actor, r.target, r.reason])).toEqual([
        ['token:canary-operator', `dead_letter:${letterId}`, 'ticket 4711: tenant asks'],
        ['token:canary-admin', `reconciliation_item:${itemId}`, 'ticket 4712: drift check'],
        [
          'token:canary-operator',
          expect.stringMatching(/^trace:sha256:[0-9a-f]{16}$/),
          'ticket 4713: where is it',
        ],
      ]);
      expect(canaryValuesIn(canary, JSON.stringify(rows))).toEqual([]);
    });
  });

  describe('when the audit of the corrected redrive is read', () => {
    it('names the fields the correction changed with a digest of each value, and holds no canary value', async () => {
      const { rows } = await h.database.sql.query<{ action: string; details: { changed?: object } }>(
        `SELECT action, details FROM audit_log WHERE target = $1 ORDER BY id`,
        [`dead_letter:${letterId}`],
      );
      const correct = rows.find((r) => r.action === 'correct');
      expect(correct?.details).toEqual({
        changed: {
          'data.phone': { from: expect.stringMatching(/^sha256:/), to: expect.stringMatching(/^sha256:/) },
        },
      });
      const all = await h.database.sql.query(`SELECT * FROM audit_log`);
      expect(canaryValuesIn(canary, JSON.stringify(all.rows))).toEqual([]);
    });
  });

  describe('when the CLI shows the canary paths', () => {
    it('masks them, reveals one item with --reveal (audited), and refuses a search by e-mail without it', async () => {
      const env = cliEnv();
      for (const args of [
        ['dlq', 'list', '--state', 'all', '--json'],
        ['dlq', 'show', String(letterId)],
        ['dlq', 'show', String(letterId), '--json'],
        ['trace', registrationId],
        ['trace', paymentId, '--json'],
        ['callbacks', 'list', '--state', 'all'],
      ]) {
        const out = await runCli(args, env);
        expect(out.code, `${args.join(' ')}: ${out.stderr}`).toBe(0);
        expect(canaryValuesIn(canary, out.stdout + out.stderr), args.join(' ')).toEqual([]);
      }
      const search = await runCli(['trace', canary.email], env);
      expect(search.code).toBe(2);
      expect(search.stderr).toContain('--reveal');

      const revealed = await runCli(['dlq', 'show', String(letterId), '--reveal', 'ticket 4714'], env);
      expect(revealed.code, revealed.stderr).toBe(0);
      expect(revealed.stdout).toContain(canary.phone);
      const { rows } = await h.database.sql.query<{ actor: string; target: string }>(
        `SELECT actor, target, reason, details::text FROM audit_log WHERE action = 'reveal' AND reason = 'ticket 4714'`,
      );
      expect(rows).toEqual([
        expect.objectContaining({ actor: expect.stringMatching(/^cli:/), target: `dead_letter:${letterId}` }),
      ]);
      expect(canaryValuesIn(canary, JSON.stringify(rows))).toEqual([]);
    }, 300_000);
  });
});
