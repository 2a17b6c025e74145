import { beforeAll, describe, expect, it } from 'vitest';
import { applicationDecisionReadBack } from '../../src/command-types/application-decisions/application-decision-read-back.js';
import type { GuardPartner } from '../../src/guard/read-backs/partner-port.js';
import { rentalPaymentReadBack } from '../../src/command-types/rental-payments/rental-payment-read-back.js';
import type { PartnerClient } from '../../src/partner/index.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';
import { useSandboxPartner } from '../support/sandbox.js';
import { ctx, tick } from './machine-fixtures.js';

describe('read-back strategies', () => {
  const sandboxed = useSandboxPartner();
  let control: SandboxControl;
  let partner: PartnerClient;
  beforeAll(() => ({ control, partner } = sandboxed));

  describe('applications', () => {
    const strategy = () => applicationDecisionReadBack(partner);
    const approve = (id: number) => ({
      decision_id: 'd',
      application_id: String(id),
      decision: 'approve' as const,
    });

    it('says applied once the application reached the decision', async () => {
      const [app] = await control.addRecords('applications', [{ status: 'submitted' }]);
      const snapshot = await strategy().snapshot(approve(Number(app!.id)), ctx);
      await tick();
      await control.patchRecord('applications', Number(app!.id), { status: 'approved' });
      expect(await strategy().verdict(approve(Number(app!.id)), snapshot, ctx)).toBe('applied');
    });

    it('says not_applied while the application is unchanged, even when updated today', async () => {
      const [app] = await control.addRecords('applications', [{ status: 'submitted' }]);
      const snapshot = await strategy().snapshot(approve(Number(app!.id)), ctx);
      expect(await strategy().verdict(approve(Number(app!.id)), snapshot, ctx)).toBe('not_applied');
    });

    it('says not_applied for an application last updated before the snapshot day (absent from the filtered list)', async () => {
      const [app] = await control.addRecords('applications', [
        { status: 'in_review', updated_at: '2024-01-05T10:00:00.000Z' },
      ]);
      const snapshot = await strategy().snapshot(approve(Number(app!.id)), ctx);
      expect(snapshot).toMatchObject({ found: true, status: 'in_review' });
      expect(await strategy().verdict(approve(Number(app!.id)), snapshot, ctx)).toBe('not_applied');
    });

    it('says applied for an application unchanged since it reached the decision on an earlier day', async () => {
      const [app] = await control.addRecords('applications', [
        { status: 'approved', updated_at: '2024-01-05T10:00:00.000Z' },
      ]);
      const snapshot = await strategy().snapshot(approve(Number(app!.id)), ctx);
      expect(await strategy().verdict(approve(Number(app!.id)), snapshot, ctx)).toBe('applied');
    });

    it('says unknown, naming what is missing, when the record has no status', async () => {
      // The production client refuses such a record outright; a port that passes it through
      // shows what the rule itself does with it.
      const records: Array<Record<string, unknown>> = [
        { id: 7, status: 'submitted', updated_at: new Date().toISOString() },
      ];
      const port = {
        listPage: async () => ({ data: { items: records, has_more: false }, status: 200, requestId: 'r' }),
      } as unknown as GuardPartner;
      const snapshot = await applicationDecisionReadBack(port).snapshot(approve(7), ctx);
      records[0] = { id: 7, updated_at: new Date(Date.now() + 1000).toISOString() };
      const missing: string[] = [];
      const verdict = await applicationDecisionReadBack(port).verdict(approve(7), snapshot, {
        ...ctx,
        missing: (m) => missing.push(m),
      });
      expect(verdict).toBe('unknown');
      expect(missing.join()).toMatch(/no status or updated_at/);
    });

    it('says unknown when the application changed some other way', async () => {
      const [app] = await control.addRecords('applications', [{ status: 'submitted' }]);
      const snapshot = await strategy().snapshot(approve(Number(app!.id)), ctx);
      await tick();
      await control.patchRecord('applications', Number(app!.id), { status: 'in_review' });
      expect(await strategy().verdict(approve(Number(app!.id)), snapshot, ctx)).toBe('unknown');
    });
  });

  describe('enrollments', () => {
    const strategy = () => rentalPaymentReadBack(partner);
    const pay = (id: number) => ({
      payment_id: 'p',
      enrollment_id: String(id),
      amount_cents: 5000,
      paid_on: '2026-10-01',
      period: '2026-10',
    });

    it('says applied only for a matching payment the snapshot did not hold', async () => {
      const [e] = await control.addRecords('enrollments', [
        {
          status: 'active',
          rental_payments: [{ amount_cents: 5000, paid_on: '2026-10-01', period: '2026-10' }],
        },
      ]);
      const id = Number(e!.id);
      const snapshot = await strategy().snapshot(pay(id), ctx);
      expect(snapshot.matching_payments).toBe(1);
      expect(await strategy().verdict(pay(id), snapshot, ctx)).toBe('not_applied');
      await tick();
      await control.patchRecord('enrollments', id, {
        rental_payments: [
          { amount_cents: 5000, paid_on: '2026-10-01', period: '2026-10' },
          { amount_cents: 5000, paid_on: '2026-10-01', period: '2026-10' },
        ],
      });
      expect(await strategy().verdict(pay(id), snapshot, ctx)).toBe('applied');
    });

    it('never says not_applied when the record carries no rental_payments, even unchanged', async () => {
      const [e] = await control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
      const id = Number(e!.id);
      await control.setConfig({ enrollment_payments_visible: false });
      try {
        const snapshot = await strategy().snapshot(pay(id), ctx);
        const missing: string[] = [];
        const verdict = await strategy().verdict(pay(id), snapshot, {
          ...ctx,
          missing: (m) => missing.push(m),
        });
        expect(verdict).toBe('unknown');
        expect(missing.join()).toMatch(/no rental_payments list/);
      } finally {
        await control.setConfig({ enrollment_payments_visible: true });
      }
    });

    it('says unknown when the enrollment changed without the payment', async () => {
      const [e] = await control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
      const id = Number(e!.id);
      const snapshot = await strategy().snapshot(pay(id), ctx);
      await tick();
      await control.patchRecord('enrollments', id, {
        rental_payments: [{ amount_cents: 5000, paid_on: '2026-10-02', period: '2026-10' }],
      });
      expect(await strategy().verdict(pay(id), snapshot, ctx)).toBe('unknown');
    });
  });
});
