import { describe, expect, it } from 'vitest';
import { build, useSandbox } from './sandbox-harness.js';

const ids = (items: Array<{ id: number }>) => items.map((item) => item.id);

describe('sandbox lists', () => {
  const h = useSandbox();

  describe('when a collection is paginated', () => {
    it('2.3: answers the list envelope', async () => {
      await h.control.addRecords(
        'properties',
        build(3, () => ({})),
      );
      const response = await h.api('GET', '/partner/v1/properties');
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        object: 'list',
        items: expect.any(Array),
        current_page: 1,
        page_count: 1,
        total_count: 3,
        has_more: false,
      });
    });

    it('4.5: defaults to page 1 of 20', async () => {
      await h.control.addRecords(
        'leads',
        build(45, () => ({})),
      );
      const response = await h.api('GET', '/partner/v1/leads');
      expect(response.body.items).toHaveLength(20);
      expect(response.body).toMatchObject({
        current_page: 1,
        page_count: 3,
        total_count: 45,
        has_more: true,
      });
    });

    it('2.3: has_more is false on the last page', async () => {
      await h.control.addRecords(
        'leads',
        build(45, () => ({})),
      );
      const response = await h.api('GET', '/partner/v1/leads?page=3');
      expect(response.body.items).toHaveLength(5);
      expect(response.body.has_more).toBe(false);
    });

    it('4.5: clamps per_page above 1000 to 1000', async () => {
      await h.control.addRecords(
        'enrollments',
        build(1001, () => ({ status: 'ended' })),
      );
      const response = await h.api('GET', '/partner/v1/enrollments?per_page=5000');
      expect(response.status).toBe(200);
      expect(response.body.items).toHaveLength(1000);
      expect(response.body.page_count).toBe(2);
    });

    it('4.5: per_page below 1 is 400 validation_error with errors[]', async () => {
      const response = await h.api('GET', '/partner/v1/listings?per_page=0');
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('validation_error');
      expect(response.body.error.errors).toEqual([expect.stringContaining('per_page')]);
    });

    it('4.5: page below 1 is 400 validation_error with errors[]', async () => {
      const response = await h.api('GET', '/partner/v1/listings?page=0');
      expect(response.status).toBe(400);
      expect(response.body.error.errors).toEqual([expect.stringContaining('page')]);
    });

    it('4.5: a non-integer page or per_page is 400 validation_error, one message each', async () => {
      const response = await h.api('GET', '/partner/v1/roles?page=abc&per_page=1.5');
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('validation_error');
      expect(response.body.error.errors).toHaveLength(2);
    });

    it('4.5: a page past the end is empty', async () => {
      await h.control.addRecords(
        'roles',
        build(2, (i) => ({ name: `r${i}` })),
      );
      const response = await h.api('GET', '/partner/v1/roles?page=9');
      expect(response.body).toMatchObject({ items: [], current_page: 9, page_count: 1, has_more: false });
    });

    it('2.3/9.3: the application list carries the deprecated last_page, the inverse of has_more', async () => {
      await h.control.addRecords(
        'applications',
        build(3, () => ({ status: 'submitted' })),
      );
      const first = await h.api('GET', '/partner/v1/applications?per_page=2');
      const last = await h.api('GET', '/partner/v1/applications?per_page=2&page=2');
      expect([first.body.has_more, first.body.last_page]).toEqual([true, false]);
      expect([last.body.has_more, last.body.last_page]).toEqual([false, true]);
    });

    it('2.3: last_page is only on the application list', async () => {
      const response = await h.api('GET', '/partner/v1/properties');
      expect(response.body).not.toHaveProperty('last_page');
    });
  });

  describe('when records are ordered', () => {
    it('4.6.2: the default order is newest first (descending id)', async () => {
      await h.control.addRecords(
        'properties',
        build(3, () => ({})),
      );
      expect(ids((await h.api('GET', '/partner/v1/properties')).body.items)).toEqual([3, 2, 1]);
    });

    it('4.6.3: listings are ascending id', async () => {
      await h.control.addRecords(
        'listings',
        build(3, () => ({})),
      );
      expect(ids((await h.api('GET', '/partner/v1/listings')).body.items)).toEqual([1, 2, 3]);
    });

    it('4.6.3: units are ascending title, ties by id', async () => {
      await h.control.addRecords('units', [{ title: 'B' }, { title: 'A' }, { title: 'B' }, { title: 'A' }]);
      expect(ids((await h.api('GET', '/partner/v1/units')).body.items)).toEqual([2, 4, 1, 3]);
    });

    it('4.6.3: roles are ascending name, ties by id', async () => {
      await h.control.addRecords('roles', [{ name: 'viewer' }, { name: 'admin' }, { name: 'admin' }]);
      expect(ids((await h.api('GET', '/partner/v1/roles')).body.items)).toEqual([2, 3, 1]);
    });

    it('4.2: customers default to created_at descending, ties by id', async () => {
      await h.control.addRecords('customers', [
        { created_at: '2026-01-02T00:00:00.000Z' },
        { created_at: '2026-01-03T00:00:00.000Z' },
        { created_at: '2026-01-02T00:00:00.000Z' },
      ]);
      expect(ids((await h.api('GET', '/partner/v1/customers')).body.items)).toEqual([2, 3, 1]);
    });

    it('4.2: customers follow order_by and order_direction, ties by id', async () => {
      await h.control.addRecords('customers', [
        { email: 'b@example.com' },
        { email: 'a@example.com' },
        { email: 'b@example.com' },
      ]);
      const response = await h.api('GET', '/partner/v1/customers?order_by=email&order_direction=asc');
      expect(ids(response.body.items)).toEqual([2, 1, 3]);
    });

    it('4.2: an unknown order_by or order_direction is 400 validation_error', async () => {
      const response = await h.api('GET', '/partner/v1/customers?order_by=shoe_size&order_direction=up');
      expect(response.status).toBe(400);
      expect(response.body.error.errors).toHaveLength(2);
    });

    it('4.6.1: consecutive pages neither overlap nor skip a record', async () => {
      await h.control.addRecords(
        'units',
        build(55, (i) => ({ title: `T${i % 7}` })),
      );
      const seen: number[] = [];
      for (let page = 1; page <= 3; page++) {
        seen.push(...ids((await h.api('GET', `/partner/v1/units?per_page=20&page=${page}`)).body.items));
      }
      expect(new Set(seen).size).toBe(55);
      expect(seen).toHaveLength(55);
    });

    it('4.6.1: the same request returns the same page while data is unchanged', async () => {
      await h.control.addRecords(
        'roles',
        build(30, (i) => ({ name: `role ${i % 4}` })),
      );
      const first = await h.api('GET', '/partner/v1/roles?page=2&per_page=7');
      const again = await h.api('GET', '/partner/v1/roles?page=2&per_page=7');
      expect(again.body).toEqual(first.body);
    });

    it('4.6.4: a record deleted while paging shifts later pages by one', async () => {
      await h.control.addRecords(
        'listings',
        build(6, () => ({})),
      );
      const first = await h.api('GET', '/partner/v1/listings?per_page=3&page=1');
      expect(ids(first.body.items)).toEqual([1, 2, 3]);
      await h.control.deleteRecord('listings', 2);
      const second = await h.api('GET', '/partner/v1/listings?per_page=3&page=2');
      expect(ids(second.body.items)).toEqual([5, 6]);
    });

    it('4.6.4: a record created while paging appears at the start', async () => {
      await h.control.addRecords(
        'properties',
        build(4, () => ({})),
      );
      await h.api('GET', '/partner/v1/properties?per_page=2');
      await h.control.addRecords('properties', [{}]);
      expect(ids((await h.api('GET', '/partner/v1/properties?per_page=2')).body.items)).toEqual([5, 4]);
    });
  });

  describe('when a date filter is given', () => {
    const day = (d: string, time: string) => ({ updated_at: `2026-03-${d}T${time}Z` });

    it('4.7.1: from and to dates are inclusive whole UTC days', async () => {
      await h.control.addRecords('applications', [
        { status: 'submitted', ...day('09', '23:59:59.999') },
        { status: 'submitted', ...day('10', '00:00:00.000') },
        { status: 'submitted', ...day('11', '23:59:59.999') },
        { status: 'submitted', ...day('12', '00:00:00.000') },
      ]);
      const response = await h.api(
        'GET',
        '/partner/v1/applications?last_updated_from_date=2026-03-10&last_updated_to_date=2026-03-11',
      );
      expect(ids(response.body.items)).toEqual([3, 2]);
      expect(response.body.total_count).toBe(2);
    });

    it('4.7.2: properties, units and leads filter with updated_at_from_date/updated_at_to_date', async () => {
      for (const resource of ['properties', 'units', 'leads'] as const) {
        await h.control.addRecords(resource, [day('01', '10:00:00.000'), day('05', '10:00:00.000')]);
        const response = await h.api('GET', `/partner/v1/${resource}?updated_at_from_date=2026-03-02`);
        expect(response.body.total_count).toBe(1);
      }
    });

    it('4.7.2: billing statements and activities filter with start_date/end_date on updated_at', async () => {
      for (const path of ['statements', 'activities'] as const) {
        await h.control.addRecords(`billing_${path}`, [day('01', '10:00:00.000'), day('05', '10:00:00.000')]);
        const response = await h.api('GET', `/partner/v1/billing/${path}?end_date=2026-03-01`);
        expect(ids(response.body.items)).toEqual([1]);
      }
    });

    it('4.7.2: application activity logs filter with from_date/to_date', async () => {
      await h.control.addRecords('application_activity_logs', [
        day('01', '10:00:00.000'),
        day('05', '10:00:00.000'),
      ]);
      const response = await h.api(
        'GET',
        '/partner/v1/applications/activity_logs?from_date=2026-03-05&to_date=2026-03-05',
      );
      expect(ids(response.body.items)).toEqual([2]);
    });

    it('4.7: a malformed date is 400 validation_error', async () => {
      const response = await h.api('GET', '/partner/v1/applications?last_updated_from_date=10/03/2026');
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('validation_error');
      expect(response.body.error.errors).toEqual([expect.stringContaining('last_updated_from_date')]);
    });

    it('4.7: an impossible calendar date is 400 validation_error', async () => {
      const response = await h.api('GET', '/partner/v1/properties?updated_at_to_date=2026-02-30');
      expect(response.status).toBe(400);
    });

    it('4.5/4.7: filters before paging: full pages of matching records, totals of the filtered set', async () => {
      // 700 leads over 7 days, 100 a day, interleaved by id: the filter keeps one in seven.
      await h.control.addRecords(
        'leads',
        build(700, (i) => day(String(10 + (i % 7)), '12:00:00.000')),
      );
      const query = 'updated_at_from_date=2026-03-13&updated_at_to_date=2026-03-13&per_page=30';
      const seen: number[] = [];
      for (let page = 1; page <= 4; page++) {
        const { body } = await h.api('GET', `/partner/v1/leads?${query}&page=${page}`);
        expect(body).toMatchObject({
          current_page: page,
          page_count: 4,
          total_count: 100,
          has_more: page < 4,
        });
        expect(body.items).toHaveLength(page < 4 ? 30 : 10);
        for (const item of body.items) expect(item.updated_at).toBe('2026-03-13T12:00:00.000Z');
        seen.push(...ids(body.items));
      }
      expect(new Set(seen).size).toBe(100);
      // The unfiltered list still counts every lead.
      const all = await h.api('GET', '/partner/v1/leads?per_page=1000');
      expect(all.body).toMatchObject({ total_count: 700, page_count: 1 });
    });

    it('4.7.3: a record changed today is found again from today', async () => {
      const [application] = await h.control.addRecords('applications', [
        { status: 'submitted', updated_at: '2020-01-01T00:00:00.000Z' },
      ]);
      const today = new Date().toISOString().slice(0, 10);
      await h.api('POST', `/partner/v1/applications/${application?.id}/approve`, { body: {} });
      const response = await h.api('GET', `/partner/v1/applications?last_updated_from_date=${today}`);
      expect(response.body.items).toEqual([
        expect.objectContaining({ id: application?.id, status: 'approved' }),
      ]);
    });
  });

  describe('when a collection has its own shape', () => {
    it('4.4: bank accounts are a bare array without the envelope', async () => {
      await h.control.addRecords(
        'bank_accounts',
        build(2, () => ({ bank_name: 'Demo' })),
      );
      const response = await h.api('GET', '/partner/v1/bank_accounts');
      expect(Array.isArray(response.body)).toBe(true);
      expect(ids(response.body)).toEqual([2, 1]);
    });

    it('4.2: customer issues are { issues: [...] } of that customer only', async () => {
      const [a, b] = await h.control.addRecords(
        'customers',
        build(2, () => ({})),
      );
      await h.control.addRecords('customer_issues', [
        { customer_id: a?.id, kind: 'x' },
        { customer_id: b?.id, kind: 'y' },
      ]);
      const response = await h.api('GET', `/partner/v1/customers/${a?.id}/issues`);
      expect(response.body).toEqual({ issues: [expect.objectContaining({ customer_id: a?.id, kind: 'x' })] });
    });

    it('4.2: issues of an unknown customer are 404 not_found', async () => {
      const response = await h.api('GET', '/partner/v1/customers/999/issues');
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('not_found');
    });

    it('4.4: users, magic links, enrollments and the other collections answer lists', async () => {
      for (const path of ['users', 'magic_links', 'enrollments', 'customers', 'listings', 'roles']) {
        const response = await h.api('GET', `/partner/v1/${path}`);
        expect(response.status, path).toBe(200);
        expect(response.body.object, path).toBe('list');
      }
    });
  });
});
