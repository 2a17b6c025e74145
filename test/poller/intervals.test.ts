import { describe, expect, it } from 'vitest';
import { pollerIntervals } from '../../src/poller/index.js';

describe('pollerIntervals', () => {
  describe('when nothing is configured', () => {
    it('polls applications every minute, reference data every 15 minutes, the rest every 5', () => {
      const intervals = pollerIntervals({ POLL_INTERVAL_SECONDS: 300, POLL_INTERVALS: {} });
      expect(intervals.applications).toBe(60);
      expect(intervals.roles).toBe(900);
      expect(intervals.customers).toBe(300);
    });
  });

  describe('when POLL_INTERVALS names a resource', () => {
    it('uses it over the defaults, and POLL_INTERVAL_SECONDS for the others', () => {
      const intervals = pollerIntervals({
        POLL_INTERVAL_SECONDS: 120,
        POLL_INTERVALS: { applications: 15, roles: 30 },
      });
      expect(intervals.applications).toBe(15);
      expect(intervals.roles).toBe(30);
      expect(intervals.enrollments).toBe(120);
    });
  });
});
