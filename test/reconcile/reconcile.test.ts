import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import type { HttpRole } from '../../src/app/http-role.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { ownKeyId } from '../../src/partner/source-partners.js';
import type { ReconcileItem } from '../../src/reconcile/reconcile-types.js';
import { ajvErrors, cloudEventOf, loadContracts } from '../support/contracts.js';
import { buildSecret } from '../receiver/webhooks.js';
import { runCli } from '../support/cli.js';
import { useReconcileRoot } from '../support/reconcile-root.js';
import { FAST_GUARD, TEST_MAX_PROCESSING_MS, uid, type Harness } from '../consumers/support/harness.js';

/**
 * Issue 45: `rentbridge reconcile` against the sandbox. Each case uses a PMS source of its own and
 * reconciles only that source, so the cases share one schema and one sandbox without seeing each
 * other's commands. Commands arrive as the receiver publishes a PMS webhook (CloudEvent source
 * `/webhooks/pms/<source>`); the consumer, the dead-letter indexer and the callbacks are the ones
 * the composition root builds.
 */
const REPORT = (id: number) => `/partner/v1/enrollments/${id}/report_rental_payments`;
const OPS_TOKEN = 'ops-token-for-reconcile-tests';
const SCOPED = { access_key: 'scoped-access-key', secret_key: 'scoped-secret-key', scoped: true };

describe('rentbridge reconcile', () => {
  let callbackServer: Server | undefined;
  let http: HttpRole;
  const callbacks: Array<{ id: string; status: string; commandId: string }> = [];
  const fx = useReconcileRoot({
    sources: ['missing', 'unexpected', 'twice', 'landed', 'absent', 'scoped'],
    async prepare(h) {
      await h.control.createKey({ ...SCOPED, owner_ids: ['owner-scoped'] });
      const server = createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          const event = JSON.parse(body) as { id: string; data: { status: string; command_id: string } };
          callbacks.push({ id: event.id, status: event.data.status, commandId: event.data.command_id });
          res.writeHead(204).end();
        });
      });
      callbackServer = server;
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as AddressInfo).port;
      return {
        PMS_PARTNER_KEYS: JSON.stringify({ scoped: SCOPED }),
        PMS_CALLBACKS: JSON.stringify({
          landed: { url: `http://127.0.0.1:${port}/outcomes`, secrets: [buildSecret()] },
        }),
        OPS_TOKEN,
      };
    },
    roles: (root) => [
      root.commandConsumer('rental-payments', { guard: FAST_GUARD }),
      root.deadLetterIndexer(),
      root.callbacks()!,
      (http = root.http()),
    ],
    cleanup: () =>
      new Promise((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve())),
  });
  let h: Harness;
  let env: Record<string, string>;
  beforeAll(() => ({ h, env } = fx));
  const reconcile = (source: string, redriveAbsent = false) => fx.reconcile(source, redriveAbsent);

  async function newEnrollment(fields: Record<string, unknown> = {}): Promise<number> {
    const [record] = await h.control.addRecords('enrollments', [
      { status: 'active', rental_payments: [], ...fields },
    ]);
    return Number(record!.id);
  }

  async function paymentsOf(enrollment: number): Promise<Array<Record<string, unknown>>> {
    const record = (await h.control.records('enrollments')).find((r) => r.id === enrollment);
    return (record?.rental_payments as Array<Record<string, unknown>> | undefined) ?? [];
  }

  const PAID = { amount_cents: 98_700, paid_on: '2026-11-02', period: '2026-11' };

  /** A payment as the receiver publishes source `source`'s webhook; answers its id. */
  async function pay(source: string, enrollment: number): Promise<string> {
    const paymentId = uid(`pay-${source}`);
    const event = toCloudEvent({
      id: `evt-${paymentId}`,
      source: `/webhooks/pms/${source}`,
      type: COMMAND_TYPES.rentalPayment,
      data: { payment_id: paymentId, enrollment_id: enrollment, ...PAID },
    });
    await h.publish(TOPICS.rentalPayments, String(enrollment), JSON.stringify(event));
    return paymentId;
  }

  const only = (items: ReconcileItem[]) => {
    expect(items).toHaveLength(1);
    return items[0]!;
  };

  describe('when a payment is removed behind rentbridge’s back', () => {
    it('reports the applied command missing', async () => {
      const enrollment = await newEnrollment();
      const id = await pay('missing', enrollment);
      expect((await h.outcomesOf(id))[0]).toMatchObject({ status: 'applied' });
      await h.control.patchRecord('enrollments', enrollment, { rental_payments: [] });
      const { run, items } = await reconcile('missing');
      expect(only(items)).toMatchObject({ verdict: 'missing', commandId: id, targetId: String(enrollment) });
      expect(run.counts).toMatchObject({ missing: 1, confirmed: 0 });
    });
  });

  describe('when a payment is added through the control API', () => {
    it('confirms the command’s payment and reports the other one unexpected', async () => {
      const enrollment = await newEnrollment();
      const id = await pay('unexpected', enrollment);
      await h.outcomesOf(id);
      const other = { amount_cents: 12_300, paid_on: '2026-11-03', period: '2026-11' };
      await h.control.patchRecord('enrollments', enrollment, {
        rental_payments: [...(await paymentsOf(enrollment)), other],
      });
      const { items } = await reconcile('unexpected');
      expect(items.map((i) => i.verdict).sort()).toEqual(['confirmed', 'unexpected']);
      const unexpected = items.find((i) => i.verdict === 'unexpected')!;
      expect(unexpected).toMatchObject({ commandId: null, targetId: String(enrollment) });
      expect(unexpected.evidence.payment).toMatchObject(other);
    });
  });

  describe('when the enrollment holds two identical payments', () => {
    it('calls the command ambiguous, not confirmed', async () => {
      const enrollment = await newEnrollment();
      const id = await pay('twice', enrollment);
      await h.outcomesOf(id);
      await h.control.patchRecord('enrollments', enrollment, {
        rental_payments: [...(await paymentsOf(enrollment)), PAID],
      });
      const { items } = await reconcile('twice');
      expect(only(items)).toMatchObject({ verdict: 'ambiguous', commandId: id });
    });
  });

  /** A payment parked `unverified`: the evidence hidden while the guard reads it back. */
  async function parked(source: string, fault: 'apply_then_timeout' | 'error'): Promise<[string, number]> {
    const enrollment = await newEnrollment();
    await h.control.setConfig({ enrollment_payments_visible: false, report_moves_updated_at: false });
    await h.control.addFault({
      method: 'POST',
      path: REPORT(enrollment),
      kind: fault,
      ...(fault === 'error' && { status: 500 }),
    });
    try {
      const id = await pay(source, enrollment);
      expect((await h.outcomesOf(id))[0]).toMatchObject({ status: 'unverified' });
      return [id, enrollment];
    } finally {
      await h.control.clearFaults();
      await h.control.setConfig({ enrollment_payments_visible: true, report_moves_updated_at: true });
    }
  }

  describe('when a write landed but its answer timed out and the read-back parked it', () => {
    it('settles it applied: one write, one applied outcome, one callback, an audit entry', async () => {
      const [id, enrollment] = await parked('landed', 'apply_then_timeout');
      const { items } = await reconcile('landed');
      expect(only(items)).toMatchObject({ verdict: 'settled_applied', commandId: id });
      const outcomes = await h.outcomesOf(id, 2);
      expect(outcomes.map((o) => o.status)).toEqual(['unverified', 'applied']);
      const { rows } = await h.database.sql.query<{ state: string }>(
        'SELECT state FROM commands WHERE command_id = $1',
        [id],
      );
      expect(rows[0]!.state).toBe('applied');
      expect((await h.writesTo(REPORT(enrollment))).map((w) => w.applied)).toEqual([true]);
      await expect
        .poll(() => callbacks.filter((c) => c.commandId === id && c.status === 'applied').length, {
          timeout: 20_000,
        })
        .toBe(1);
      const audit = await h.database.sql.query<{ action: string; actor: string }>(
        "SELECT action, actor FROM audit_log WHERE target LIKE '%' || $1",
        [id],
      );
      expect(audit.rows).toEqual([{ action: 'reconcile_settle', actor: 'reconcile' }]);
      // A second pass finds it applied and confirms it; nothing more is published.
      expect(only((await reconcile('landed')).items)).toMatchObject({ verdict: 'confirmed', commandId: id });
    });
  });

  describe('when a write never landed and the read-back parked it', () => {
    it('settles it absent once the bound has passed, and with redrive on writes it exactly once more', async () => {
      const [id, enrollment] = await parked('absent', 'error');
      await expect
        .poll(
          async () =>
            (await h.database.sql.query('SELECT 1 FROM dead_letters WHERE command_id = $1', [id])).rowCount,
          { timeout: 20_000 },
        )
        .toBe(1);
      await new Promise((r) => setTimeout(r, TEST_MAX_PROCESSING_MS + 200));
      const first = only((await reconcile('absent')).items);
      expect(first).toMatchObject({ verdict: 'settled_absent', commandId: id });
      expect(first.evidence.settlement).toMatch(/safe to redrive/);
      expect((await h.writesTo(REPORT(enrollment))).length).toBe(1);

      const second = only((await reconcile('absent', true)).items);
      expect(second.evidence.settlement).toMatch(/^redriven/);
      const outcomes = await h.outcomesOf(id, 2);
      expect(outcomes.map((o) => o.status)).toEqual(['unverified', 'applied']);
      expect((await h.writesTo(REPORT(enrollment))).map((w) => [w.applied, w.status])).toEqual([
        [false, 500],
        [true, 201],
      ]);
      expect(await paymentsOf(enrollment)).toHaveLength(1);
    });
  });

  describe('when a source has a scoped key of its own', () => {
    it('reads its commands’ records with that key', async () => {
      const enrollment = await newEnrollment({ owner_id: 'owner-scoped' });
      const id = await pay('scoped', enrollment);
      expect((await h.outcomesOf(id))[0]).toMatchObject({ status: 'applied' });
      const item = only((await reconcile('scoped')).items);
      expect(item).toMatchObject({ verdict: 'confirmed', commandId: id });
      expect(item.evidence.read_with).toBe(ownKeyId(SCOPED.access_key));
    });
  });

  describe('when an operator runs rentbridge reconcile', () => {
    it('exits 0 when all is confirmed, 1 on drift with the table, 2 on bad usage', async () => {
      const cli = (args: string[]) =>
        runCli(
          ['reconcile', ...args],
          { ...env, PARTNER_API_URL: h.sandbox.url, LOG_LEVEL: 'warn' },
          120_000,
        );
      const ok = await cli(['--source', 'scoped', '--format', 'json']);
      expect(ok.code, ok.stderr).toBe(0);
      const parsed = JSON.parse(ok.stdout) as { drift: boolean; items: Array<{ verdict: string }> };
      expect(parsed).toMatchObject({ drift: false, items: [{ verdict: 'confirmed' }] });
      const drift = await cli(['--source', 'missing']);
      expect(drift.code, drift.stderr).toBe(1);
      expect(drift.stdout).toMatch(/1 item\(s\): missing 1/);
      expect(drift.stdout).toMatch(/missing\s+rental_payment\s+missing\s+pay-missing/);
      const bad = await cli(['--format', 'xml']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--format must be one of table, json, csv');
      // Three processes started from source (tsx): each takes seconds, more on a busy machine.
    }, 240_000);
  });

  describe('when the console asks for runs', () => {
    it('lists them, and shows a run with its drift by type and source and its items, drift first', async () => {
      const get = async (path: string) => {
        const res = await fetch(`http://127.0.0.1:${http.port}/ops/api/${path}`, {
          headers: { authorization: `Bearer ${OPS_TOKEN}` },
        });
        expect(res.status).toBe(200);
        return (await res.json()) as Record<string, unknown>;
      };
      const runs = (await get('reconciliation/runs')).items as Array<{ id: number; source: string }>;
      const unexpected = runs.find((r) => r.source === 'unexpected')!;
      const shown = await get(`reconciliation/runs/${unexpected.id}`);
      expect(shown.drift).toEqual([
        { commandType: 'rental_payment', source: null, verdict: 'unexpected', count: 1 },
      ]);
      const items = shown.items as Array<{ verdict: string; commandId: string | null }>;
      expect(items.map((i) => i.verdict)).toEqual(['unexpected', 'confirmed']);
      expect(items[1]!.commandId).toMatch(/^pay-unexpected/);
      const bad = await fetch(`http://127.0.0.1:${http.port}/ops/api/reconciliation/runs/x`, {
        headers: { authorization: `Bearer ${OPS_TOKEN}` },
      });
      expect(bad.status).toBe(400);
    });
  });

  describe('when runs finish', () => {
    it('publishes a report per run on reconciliation.reports, as the AsyncAPI document and schema say', async () => {
      const contracts = await loadContracts();
      const validate = contracts.channels
        .get(TOPICS.reconciliationReports)
        ?.get('rentbridge.reconciliation.report');
      expect(validate).toBeDefined();
      const runs = await fx.reconciler().repository.runs(100);
      const messages = await h.kafka.readMessages(TOPICS.reconciliationReports, runs.length, 100_000);
      const reports = messages.map((m) => {
        const event = cloudEventOf(m);
        expect(validate!(JSON.parse(m.value!.toString())), ajvErrors(validate!)).toBe(true);
        const schema = contracts.schema('reconciliation-report');
        expect(schema(event.data), ajvErrors(schema)).toBe(true);
        return {
          key: m.key?.toString(),
          data: event.data as { run_id: number; drift: boolean; counts: object },
        };
      });
      const missing = runs.find((r) => r.source === 'missing')!;
      const report = reports.find((r) => r.data.run_id === missing.id)!;
      expect(report.key).toBe(String(missing.id));
      expect(report.data).toMatchObject({ drift: true, counts: { missing: 1 } });
      // A new consumer group joins and reads the topic from the start: seconds on a busy broker.
    }, 120_000);
  });
});
