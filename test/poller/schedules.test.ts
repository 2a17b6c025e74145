import { afterEach, describe, expect, it } from 'vitest';
import { buildRecords, createPollerHarness, type PollerHarness } from './poller-harness.js';

let h: PollerHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('poller schedules', () => {
  describe('when a customer_issues pass (a request per customer) holds the poll lane of the shared budget', () => {
    it('lets a pass of another resource through before the issues pass ends', async () => {
      // 300/min: the poll lane is paced at 5 requests a second, so 60 customers take ~12 s.
      h = await createPollerHarness({ limitPerMinute: 300 });
      await h.control.addRecords('customers', buildRecords(60));
      await h.control.addRecords(
        'applications',
        buildRecords(3, () => ({ status: 'submitted' })),
      );
      const poller = h.poller();
      await poller.runOnce('customers');
      const finished: string[] = [];
      const issueRequests = () => h!.requests.filter((u) => u.pathname.endsWith('/issues')).length;
      const issues = poller.runOnce('customer_issues').then(() => finished.push('customer_issues'));
      await expect.poll(issueRequests, { timeout: 20_000 }).toBeGreaterThan(5);
      const applications = poller.runOnce('applications').then(() => finished.push('applications'));
      await Promise.all([issues, applications]);
      expect(finished).toEqual(['applications', 'customer_issues']);
      expect(issueRequests()).toBe(60);
      expect(await h.events('applications')).toHaveLength(3);
    }, 60_000);
  });
});
