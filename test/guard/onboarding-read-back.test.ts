import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customerRegistrationReadBack } from '../../src/command-types/customer-registrations/customer-registration-read-back.js';
import { enrollmentReadBack } from '../../src/command-types/enrollments/enrollment-read-back.js';
import { byCreatedAt, byId, createdSince } from '../../src/guard/read-backs/newest-first.js';
import type { GuardPartner, ListEnvelope } from '../../src/guard/read-backs/partner-port.js';
import type { PartnerClient } from '../../src/partner/index.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';
import { useSandboxPartner } from '../support/sandbox.js';
import { ctx, tick } from './machine-fixtures.js';
import { buildRegistration } from '../receiver/webhooks.js';

let seq = 0;
let future = Date.parse('2031-01-01T00:00:00Z');

describe('onboarding read-back strategies', () => {
  const sandboxed = useSandboxPartner();
  let control: SandboxControl;
  let partner: PartnerClient;
  beforeAll(() => ({ control, partner } = sandboxed));

  describe('customer registration', () => {
    const strategy = () => customerRegistrationReadBack(partner);
    const customer = (c: ReturnType<typeof buildRegistration>, overrides: Record<string, unknown> = {}) => ({
      first_name: c.first_name,
      last_name: c.last_name,
      email: c.email,
      phone: c.phone,
      ...overrides,
    });

    it('says applied when a customer with the e-mail and details was created since the snapshot', async () => {
      const command = buildRegistration();
      await control.addRecords('customers', [customer(buildRegistration())]);
      const snapshot = await strategy().snapshot(command, ctx);
      await tick();
      await control.addRecords('customers', [customer(command, { email: command.email.toUpperCase() })]);
      await control.addRecords('customers', [customer(buildRegistration())]);
      expect(await strategy().verdict(command, snapshot, ctx)).toBe('applied');
    });

    it('says not_applied when no customer was created since the snapshot', async () => {
      const command = buildRegistration();
      await control.addRecords('customers', [customer(buildRegistration())]);
      const snapshot = await strategy().snapshot(command, ctx);
      expect(await strategy().verdict(command, snapshot, ctx)).toBe('not_applied');
    });

    it('never takes a customer holding the e-mail since before the snapshot for ours', async () => {
      const command = buildRegistration();
      const [holder] = await control.addRecords('customers', [customer(command)]);
      await tick();
      await control.addRecords('customers', [customer(buildRegistration())]);
      const snapshot = await strategy().snapshot(command, ctx);
      expect(snapshot.existing_customer_id).toBe(String(holder!.id));
      expect(await strategy().verdict(command, snapshot, ctx)).toBe('not_applied');
    });

    it('says unknown when the customer created since has the e-mail but other details', async () => {
      const command = buildRegistration();
      await control.addRecords('customers', [customer(buildRegistration())]);
      const snapshot = await strategy().snapshot(command, ctx);
      await tick();
      await control.addRecords('customers', [customer(command, { first_name: 'Grace' })]);
      expect(await strategy().verdict(command, snapshot, ctx)).toBe('unknown');
    });

    it('says unknown when a customer created since shows no e-mail', async () => {
      const command = buildRegistration();
      await control.addRecords('customers', [customer(buildRegistration())]);
      const snapshot = await strategy().snapshot(command, ctx);
      await tick();
      await control.addRecords('customers', [{ first_name: 'No', last_name: 'Mail' }]);
      expect(await strategy().verdict(command, snapshot, ctx)).toBe('unknown');
    });
  });

  describe.each([
    ['ascending', 'seconds'],
    ['descending', 'seconds'],
    ['ascending', 'milliseconds'],
    ['descending', 'milliseconds'],
  ] as const)('when ties are broken by %s id and created_at is to the %s', (tieBreak, precision) => {
    const strategy = () => customerRegistrationReadBack(partner);
    // Far in the future and later at each call: these records are the newest whatever else exists.
    const later = () => {
      future += 3_600_000;
      const iso = new Date(future).toISOString();
      return precision === 'seconds' ? iso.replace('.000Z', 'Z') : iso;
    };
    beforeAll(async () => {
      await control.setConfig({ tie_break: tieBreak, created_at_precision: precision });
    });
    afterAll(async () => {
      await control.setConfig({ tie_break: null, created_at_precision: 'milliseconds' });
    });
    const person = (c: ReturnType<typeof buildRegistration>, createdAt: string) => ({
      first_name: c.first_name,
      last_name: c.last_name,
      email: c.email,
      phone: c.phone,
      created_at: createdAt,
    });

    it('finds ours created after the snapshot with the same created_at as the marker', async () => {
      const at = later();
      const command = buildRegistration();
      await control.addRecords('customers', [person(buildRegistration(), at)]);
      const snapshot = await strategy().snapshot(command, ctx);
      expect(snapshot.marker).toMatchObject({ created_at: at });
      await control.addRecords('customers', [person(command, at)]);
      expect(await strategy().verdict(command, snapshot, ctx)).toBe('applied');
    });

    it('never takes a customer the snapshot page held with that created_at for ours', async () => {
      const at = later();
      const command = buildRegistration();
      await control.addRecords('customers', [person(command, at), person(buildRegistration(), at)]);
      const snapshot = await strategy().snapshot(command, ctx);
      expect(await strategy().verdict(command, snapshot, ctx)).toBe('not_applied');
    });

    it('says not_applied once a record strictly older than the marker is reached', async () => {
      const command = buildRegistration();
      const older = later();
      const at = later();
      await control.addRecords('customers', [person(buildRegistration(), older)]);
      await control.addRecords('customers', [person(buildRegistration(), at)]);
      const snapshot = await strategy().snapshot(command, ctx);
      await control.addRecords('customers', [person(buildRegistration(), at)]);
      expect(await strategy().verdict(command, snapshot, ctx)).toBe('not_applied');
    });

    // Enrollments are newest first by id (spec 4.6.2), which neither setting touches: the
    // read-back must give the same verdicts under each.
    it('finds an enrollment of the customer created after the snapshot, and only that', async () => {
      const [c] = await control.addRecords('customers', [person(buildRegistration(), later())]);
      const customerId = Number(c!.id);
      const enrollment = () => ({ enrollment_request_id: `e-${++seq}`, customer_id: String(customerId) });
      const [before] = await control.addRecords('enrollments', [
        { customer_id: customerId, status: 'ended' },
      ]);
      await control.addRecords('enrollments', [{ customer_id: 999_999, status: 'active' }]);
      const enrollments = enrollmentReadBack(partner);
      const snapshot = await enrollments.snapshot(enrollment(), ctx);
      expect(snapshot.marker).not.toMatchObject({ id: String(before!.id) });
      expect(await enrollments.verdict(enrollment(), snapshot, ctx)).toBe('not_applied');
      await control.addRecords('enrollments', [{ customer_id: 999_998, status: 'active' }]);
      expect(await enrollments.verdict(enrollment(), snapshot, ctx)).toBe('not_applied');
      await control.addRecords('enrollments', [{ customer_id: customerId, status: 'active' }]);
      await control.addRecords('enrollments', [{ customer_id: 999_997, status: 'active' }]);
      expect(await enrollments.verdict(enrollment(), snapshot, ctx)).toBe('applied');
    });
  });

  describe('when the marker shows no created_at', () => {
    it('says unknown, never not_applied, and still finds ours before it', async () => {
      const command = buildRegistration();
      const snapshot = await customerRegistrationReadBack(partner).snapshot(command, ctx);
      const noDate = {
        ...snapshot,
        marker: { id: (snapshot.marker as { id: string }).id, created_at: null },
      };
      expect(await customerRegistrationReadBack(partner).verdict(command, noDate, ctx)).toBe('unknown');
      await control.addRecords('customers', [
        {
          first_name: command.first_name,
          last_name: command.last_name,
          email: command.email,
          phone: command.phone,
          created_at: new Date((future += 3_600_000)).toISOString(),
        },
      ]);
      expect(await customerRegistrationReadBack(partner).verdict(command, noDate, ctx)).toBe('applied');
    });
  });

  describe('enrollment', () => {
    const strategy = () => enrollmentReadBack(partner);
    async function newCustomer() {
      const [c] = await control.addRecords('customers', [
        { first_name: 'A', last_name: 'B', email: `${Date.now()}-${++seq}@example.com`, phone: '5550000000' },
      ]);
      return String(c!.id);
    }
    const command = (customerId: string) => ({
      enrollment_request_id: `e-${++seq}`,
      customer_id: customerId,
    });

    it('says applied when an enrollment of the customer was created since the snapshot', async () => {
      const customerId = await newCustomer();
      await control.addRecords('enrollments', [{ customer_id: 999_999, status: 'active' }]);
      const snapshot = await strategy().snapshot(command(customerId), ctx);
      await control.addRecords('enrollments', [{ customer_id: Number(customerId), status: 'active' }]);
      expect(await strategy().verdict(command(customerId), snapshot, ctx)).toBe('applied');
    });

    it("says not_applied when the customer's only enrollment predates the snapshot", async () => {
      const customerId = await newCustomer();
      const [held] = await control.addRecords('enrollments', [
        { customer_id: Number(customerId), status: 'active' },
      ]);
      await control.addRecords('enrollments', [{ customer_id: 999_999, status: 'active' }]);
      const snapshot = await strategy().snapshot(command(customerId), ctx);
      expect(snapshot.marker).not.toMatchObject({ id: String(held!.id) });
      expect(await strategy().verdict(command(customerId), snapshot, ctx)).toBe('not_applied');
    });

    it('says unknown when an enrollment created since shows no customer_id', async () => {
      const customerId = await newCustomer();
      const snapshot = await strategy().snapshot(command(customerId), ctx);
      await control.addRecords('enrollments', [{ status: 'active' }]);
      expect(await strategy().verdict(command(customerId), snapshot, ctx)).toBe('unknown');
    });
  });
});

describe('createdSince', () => {
  /** A list whose pages are served from `pages` in turn, one call after another. */
  function scripted(pages: ListEnvelope[]): GuardPartner {
    let call = 0;
    return {
      listPage: async () => ({
        data: pages[Math.min(call++, pages.length - 1)]!,
        status: 200,
        requestId: 'r',
      }),
    } as unknown as GuardPartner;
  }
  const records = (ids: number[]) => ids.map((id) => ({ id, customer_id: id }));
  const page = (ids: number[], n: number, total: number, more: boolean): ListEnvelope => ({
    items: records(ids),
    current_page: n,
    total_count: total,
    has_more: more,
  });

  describe('when the list drifts while it is read', () => {
    it('walks again and returns the records a deletion would have hidden', async () => {
      const partner = scripted([
        page([9, 8], 1, 5, true),
        page([6, 5], 2, 4, true), // 7 deleted meanwhile: page 2 shifted
        page([9, 8], 1, 4, true),
        page([6, 5], 2, 4, true),
      ]);
      const result = await createdSince(partner, 'enrollments', { id: '5', created_at: null }, byId, {
        nextReadId: () => 'r',
      });
      expect(result).toEqual({ records: records([9, 8, 6]), uncertain: [], complete: true });
    });

    it('reports itself incomplete when the drift never settles', async () => {
      let total = 10;
      const partner = {
        listPage: async (_: string, q: Record<string, number>) => ({
          data: page(q.page === 1 ? [9, 8] : [7, 6], q.page!, total--, true),
          status: 200,
          requestId: 'r',
        }),
      } as unknown as GuardPartner;
      const result = await createdSince(partner, 'enrollments', { id: '1', created_at: null }, byId, {
        nextReadId: () => 'r',
      });
      expect(result.complete).toBe(false);
    });
  });

  describe('when a customer met shows no created_at', () => {
    it('cannot prove absence: the walk is incomplete and says why', async () => {
      const at = '2026-11-25T04:00:00Z';
      const partner = scripted([
        {
          items: [
            { id: 7, email: 'a@example.com' },
            { id: 5, email: 'm@example.com', created_at: at },
            { id: 4, email: 'o@example.com', created_at: '2026-11-25T03:00:00Z' },
          ],
          current_page: 1,
          total_count: 3,
          has_more: false,
        },
      ]);
      const result = await createdSince(
        partner,
        'customers',
        { id: '5', created_at: at, tied_ids: ['5'], tied_complete: true },
        byCreatedAt,
        { nextReadId: () => 'r' },
      );
      // Before the marker, its place proves it new; still no proof of absence for anything else.
      expect(result.records.map((r) => r.id)).toEqual([7]);
      expect(result.complete).toBe(false);
      expect(result.why).toMatch(/no created_at/);
    });
  });
});
