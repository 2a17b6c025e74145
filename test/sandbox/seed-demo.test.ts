import { describe, expect, it } from 'vitest';
import { RecordStore } from '../../src/dev/sandbox/record-store.js';
import { seedDemo } from '../../src/dev/sandbox/seed-demo.js';
import { RESOURCES } from '../../src/partner/resources.js';
import { useSandbox } from './sandbox-harness.js';

function snapshot(store: RecordStore) {
  return Object.fromEntries(RESOURCES.map((r) => [r, [...store.collection(r).values()]]));
}

describe('sandbox demo seed', () => {
  const h = useSandbox({ seed: 'demo', reset: false });

  describe('when the sandbox starts with --seed demo', () => {
    it('DESIGN sandbox: holds a few thousand records across every collection', async () => {
      let total = 0;
      for (const resource of RESOURCES) {
        const count = (await h.control.records(resource)).length;
        expect(count, resource).toBeGreaterThan(0);
        total += count;
      }
      expect(total).toBeGreaterThan(2000);
    });

    it('DESIGN sandbox: has applications in several states and active enrollments with payments', async () => {
      const statuses = new Set((await h.control.records('applications')).map((a) => a.status));
      expect(statuses).toEqual(new Set(['submitted', 'in_review', 'approved', 'declined']));
      const enrollments = await h.control.records('enrollments');
      expect(
        enrollments.some((e) => e.status === 'active' && (e.rental_payments as unknown[]).length > 0),
      ).toBe(true);
      expect(enrollments.some((e) => e.status === 'ended')).toBe(true);
    });

    it('DESIGN sandbox: gives at most one active enrollment per customer', async () => {
      const active = (await h.control.records('enrollments')).filter((e) => e.status === 'active');
      expect(new Set(active.map((e) => e.customer_id)).size).toBe(active.length);
    });

    it('DESIGN sandbox: is served through the Partner API', async () => {
      const response = await h.api('GET', '/partner/v1/units?per_page=1000');
      expect(response.body.total_count).toBe(600);
    });
  });

  describe('when the demo data set is loaded twice', () => {
    it('DESIGN sandbox: is the same both times (deterministic)', () => {
      const a = new RecordStore();
      const b = new RecordStore();
      seedDemo(a);
      seedDemo(b);
      expect(snapshot(a)).toEqual(snapshot(b));
    });
  });
});
