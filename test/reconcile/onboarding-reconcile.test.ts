import { beforeAll, describe, expect, it } from 'vitest';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { enrollmentRequestIdOf } from '../../src/contracts/commands.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { TOPICS } from '../../src/kafka/topics.js';
import type { ReconcileItem } from '../../src/reconcile/reconcile-types.js';
import { useReconcileRoot } from '../support/reconcile-root.js';
import { FAST_GUARD, TEST_MAX_PROCESSING_MS, uid, type Harness } from '../consumers/support/harness.js';

/**
 * Issue 45, the onboarding commands: registrations and enrollments reconciled against the
 * sandbox's customers and enrollments lists (a customer by e-mail, the customer's newest
 * enrollment), with the consumers the composition root builds. Each case reconciles only its own
 * PMS source.
 *
 * A registration is parked `unverified` the way a lagging list parks it: the create lands (or
 * fails), the sandbox keeps what the API created out of the lists for a while (`list_lag_ms`),
 * and a customer without an e-mail shows up since the snapshot, so the read-back at the bound
 * cannot tell (decision 018). The evidence is shown afterwards: the lag passes, the other
 * customer gets its e-mail.
 */
const CREATE_CUSTOMER = '/v1/partners/customers';
const LAG_MS = TEST_MAX_PROCESSING_MS + 3000;

describe('rentbridge reconcile, customer registrations and enrollments', () => {
  const fx = useReconcileRoot({
    sources: ['onb-missing', 'onb-ended', 'onb-refused', 'onb-landed', 'onb-absent'],
    roles: (root) => [
      root.commandConsumer('customer-registrations', { guard: FAST_GUARD }),
      root.commandConsumer('enrollments', { guard: FAST_GUARD }),
      root.deadLetterIndexer(),
    ],
  });
  let h: Harness;
  beforeAll(() => ({ h } = fx));
  const reconcile = (source: string, redriveAbsent = false) => fx.reconcile(source, redriveAbsent);

  /** A registration as the receiver publishes source `source`'s webhook; answers the command. */
  async function register(source: string, fields: Record<string, unknown> = {}) {
    const id = uid(`reg-${source}`);
    const command = {
      registration_id: id,
      pms_reference: `tenant-${id}`,
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: `${id}@example.com`.toLowerCase(),
      phone: '5551234567',
      ...fields,
    };
    const event = toCloudEvent({
      id: `evt-${id}`,
      source: `/webhooks/pms/${source}`,
      type: COMMAND_TYPES.customerRegistration,
      data: command,
    });
    await h.publish(TOPICS.customerRegistrations, command.email, JSON.stringify(event));
    return command;
  }

  const customerOf = async (email: string) =>
    (await h.control.records('customers')).filter((c) => c.email === email);
  const createWrites = async (email: string) =>
    (await h.control.ledger()).writes.filter(
      (w) => w.path === CREATE_CUSTOMER && (w.body as { email?: string } | null)?.email === email,
    );
  const byType = (items: ReconcileItem[]) =>
    items
      .map((i) => [i.commandType, i.verdict, i.commandId])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0])));

  describe('when a customer is removed behind rentbridge’s back', () => {
    it('reports its registration missing, and its enrollment too', async () => {
      const command = await register('onb-missing', { enroll: true });
      const enrollmentId = enrollmentRequestIdOf(command.registration_id);
      expect((await h.outcomesOf(command.registration_id))[0]).toMatchObject({ status: 'applied' });
      const [enrolled] = await h.outcomesOf(enrollmentId);
      expect(enrolled).toMatchObject({ status: 'applied' });
      const before = await reconcile('onb-missing');
      expect(byType(before.items)).toEqual([
        ['customer_registration', 'confirmed', command.registration_id],
        ['enrollment', 'confirmed', enrollmentId],
      ]);
      const [customer] = await customerOf(command.email);
      await h.control.deleteRecord('customers', customer!.id);
      await h.control.deleteRecord('enrollments', Number(enrolled!.partner_enrollment_id));
      const { run, items } = await reconcile('onb-missing');
      expect(byType(items)).toEqual([
        ['customer_registration', 'missing', command.registration_id],
        ['enrollment', 'missing', enrollmentId],
      ]);
      expect(run.counts).toMatchObject({ missing: 2, confirmed: 0 });
    });
  });

  describe('when an enrollment is ended on the platform', () => {
    it('reports the enrollment missing and names its status', async () => {
      const command = await register('onb-ended', { enroll: true });
      const [enrolled] = await h.outcomesOf(enrollmentRequestIdOf(command.registration_id));
      await h.control.patchRecord('enrollments', Number(enrolled!.partner_enrollment_id), {
        status: 'cancelled',
      });
      const { items } = await reconcile('onb-ended');
      const item = items.find((i) => i.commandType === 'enrollment')!;
      expect(item).toMatchObject({ verdict: 'missing', reason: expect.stringContaining('cancelled') });
    });
  });

  describe('when a customer appears after rentbridge’s registration of it was refused', () => {
    it('reports the customer unexpected, naming the refused registration', async () => {
      await h.control.addFault({
        method: 'POST',
        path: CREATE_CUSTOMER,
        kind: 'error',
        status: 422,
        code: 'validation_error',
      });
      const command = await register('onb-refused');
      try {
        expect((await h.outcomesOf(command.registration_id))[0]).toMatchObject({ status: 'rejected' });
      } finally {
        await h.control.clearFaults();
      }
      // Another system registers the same person meanwhile.
      const [customer] = await h.control.addRecords('customers', [
        { email: command.email, first_name: 'Ada', last_name: 'Lovelace', phone: '5551234567' },
      ]);
      const { items } = await reconcile('onb-refused');
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({
        verdict: 'unexpected',
        commandType: 'customer_registration',
        commandId: null,
        targetId: command.email,
        evidence: { record: { id: customer!.id } },
      });
      expect(items[0]!.reason).toContain(`onb-refused/${command.registration_id} (rejected)`);
    });
  });

  /**
   * A registration whose create gets `fault`, parked `unverified`: the list lags, and a customer
   * without an e-mail appears since the snapshot. Answers the command and that customer's id.
   */
  async function parked(source: string, fault: 'apply_then_timeout' | 'error', fields = {}) {
    await h.control.setConfig({ list_lag_ms: LAG_MS });
    await h.control.addFault({
      method: 'POST',
      path: CREATE_CUSTOMER,
      kind: fault,
      ...(fault === 'error' && { status: 500 }),
    });
    try {
      const command = await register(source, fields);
      await expect.poll(async () => (await createWrites(command.email)).length, { timeout: 20_000 }).toBe(1);
      const [unkeyed] = await h.control.addRecords('customers', [{ first_name: 'No', last_name: 'Mail' }]);
      expect((await h.outcomesOf(command.registration_id))[0]).toMatchObject({ status: 'unverified' });
      return { command, unkeyed: unkeyed!.id };
    } finally {
      await h.control.clearFaults();
      await h.control.setConfig({ list_lag_ms: 0 });
    }
  }

  describe('when a create landed but its answer timed out and the lagging list parked it', () => {
    it('settles it applied once the list shows the customer: one create, one applied outcome, its enrollment follows', async () => {
      const { command, unkeyed } = await parked('onb-landed', 'apply_then_timeout', { enroll: true });
      await h.control.patchRecord('customers', unkeyed, { email: `${uid('other')}@example.com` });
      await new Promise((r) => setTimeout(r, LAG_MS));
      const { items } = await reconcile('onb-landed');
      expect(byType(items)).toEqual([['customer_registration', 'settled_applied', command.registration_id]]);
      const outcomes = await h.outcomesOf(command.registration_id, 2);
      const [customer] = await customerOf(command.email);
      expect(outcomes.map((o) => o.status)).toEqual(['unverified', 'applied']);
      expect(outcomes[1]).toMatchObject({ partner_customer_id: String(customer!.id) });
      expect((await createWrites(command.email)).map((w) => w.applied)).toEqual([true]);
      // The registration asked to be enrolled: the settled outcome brings its enrollment command.
      const [enrolled] = await h.outcomesOf(enrollmentRequestIdOf(command.registration_id));
      expect(enrolled).toMatchObject({ status: 'applied', partner_customer_id: String(customer!.id) });
      const again = await reconcile('onb-landed');
      expect(byType(again.items)).toEqual([
        ['customer_registration', 'confirmed', command.registration_id],
        ['enrollment', 'confirmed', enrollmentRequestIdOf(command.registration_id)],
      ]);
    });
  });

  describe('when a create never landed and the lagging list parked it', () => {
    it('settles it absent once the bound has passed, and with redrive on creates the customer exactly once', async () => {
      const { command, unkeyed } = await parked('onb-absent', 'error');
      await expect
        .poll(
          async () =>
            (
              await h.database.sql.query('SELECT 1 FROM dead_letters WHERE command_id = $1', [
                command.registration_id,
              ])
            ).rowCount,
          { timeout: 20_000 },
        )
        .toBe(1);
      // Shown: the customer without an e-mail was someone else's.
      await h.control.patchRecord('customers', unkeyed, { email: `${uid('other')}@example.com` });
      await new Promise((r) => setTimeout(r, TEST_MAX_PROCESSING_MS + 200));
      const first = await reconcile('onb-absent');
      expect(byType(first.items)).toEqual([
        ['customer_registration', 'settled_absent', command.registration_id],
      ]);
      expect(first.items[0]!.evidence.settlement).toMatch(/safe to redrive/);

      const second = await reconcile('onb-absent', true);
      expect(second.items[0]!.evidence.settlement).toMatch(/^redriven/);
      const outcomes = await h.outcomesOf(command.registration_id, 2);
      expect(outcomes.map((o) => o.status)).toEqual(['unverified', 'applied']);
      expect((await createWrites(command.email)).map((w) => [w.applied, w.status])).toEqual([
        [false, 500],
        [true, 201],
      ]);
      expect(await customerOf(command.email)).toHaveLength(1);
    });
  });
});
