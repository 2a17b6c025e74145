import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPassHealth } from '../../src/poller/pass-health.js';
import { relayRoleCheck, type RoleCheck } from '../../src/app/readiness.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/** Each role's part of /readyz tells about its own work (decision 021). */

const noAdmin = {} as Parameters<RoleCheck['check']>[0];

describe("the relay's readiness", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  describe('when a row has waited longer than RELAY_STALL_SECONDS', () => {
    beforeAll(async () => {
      await database.sql.query(
        `INSERT INTO outbox (event_id, topic, key, type, source, data, created_at)
         VALUES ($1, 'commands.rental-payments', 'enr-1', 'test.stalled', '/test', '{}'::jsonb, now() - interval '10 minutes')`,
        [randomUUID()],
      );
    });

    it('fails on the relay that publishes, saying why', async () => {
      const check = relayRoleCheck({ isPublisher: () => true }, database.db, 120);
      expect(await check.check(noAdmin)).toMatch(
        /not making progress: the oldest unpublished outbox row is \d+ s old/,
      );
      expect(await check.details!(noAdmin)).toMatchObject({ state: 'publishing', backlog: 1 });
    });

    it('passes on a standby, which says it stands by', async () => {
      const check = relayRoleCheck({ isPublisher: () => false }, database.db, 120);
      expect(await check.check(noAdmin)).toBe(true);
      expect(await check.details!(noAdmin)).toMatchObject({ state: 'standing by', backlog: 1 });
    });
  });
});

describe("the poller's readiness", () => {
  it('is ready before any pass, and while some resource succeeds', () => {
    const health = createPassHealth();
    expect(health.check()).toBe(true);
    health.record({ resource: 'customers', outcome: 'failed', error: 'Partner API 503' });
    health.record({ resource: 'units', outcome: 'completed' });
    expect(health.check()).toBe(true);
    expect(health.details().customers).toMatchObject({
      last: 'failed',
      failuresInARow: 1,
      lastSuccessAt: null,
    });
  });

  it('fails when the latest pass of every resource it tried failed, and recovers with a success', () => {
    const health = createPassHealth();
    health.record({ resource: 'customers', outcome: 'completed' });
    health.record({ resource: 'customers', outcome: 'failed', error: 'fetch failed' });
    health.record({ resource: 'units', outcome: 'failed', error: 'fetch failed' });
    expect(health.check()).toMatch(/no poller pass succeeds or moves.*\(customers: fetch failed\)/);
    expect(health.details().customers).toMatchObject({
      failuresInARow: 1,
      lastSuccessAt: expect.any(String),
    });
    health.record({ resource: 'units', outcome: 'completed' });
    expect(health.check()).toBe(true);
  });

  describe('by the rule of the overview and the alert (src/poller/pass-staleness.ts)', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('is ready while a pass under way reads its pages, though every earlier pass failed', () => {
      vi.useFakeTimers({ now: new Date('2026-11-27T10:00:00Z') });
      const health = createPassHealth();
      health.record({ resource: 'customers', outcome: 'failed', error: 'Partner API 503' });
      expect(health.check()).toMatch(/no poller pass succeeds or moves/);
      health.progress({ resource: 'customers', pages: 0, pageCount: 0 });
      // A retry that has read nothing yet shows nothing: still failing.
      expect(health.check()).toMatch(/no poller pass succeeds or moves/);
      // A long pass: a page every minute for 40 minutes, never a success.
      for (let page = 1; page <= 40; page++) {
        vi.advanceTimersByTime(60_000);
        health.progress({ resource: 'customers', pages: page, pageCount: 800 });
        expect(health.check()).toBe(true);
      }
      expect(health.details().customers).toMatchObject({
        last: 'failed',
        underWay: { progress: 'page 40 of 800', lastProgressAt: '2026-11-27T10:40:00.000Z' },
      });
    });

    it('fails once the pass under way has had no page for POLLER_STALE_SECONDS, saying so', () => {
      vi.useFakeTimers({ now: new Date('2026-11-27T10:00:00Z') });
      const health = createPassHealth();
      health.record({ resource: 'units', outcome: 'completed' });
      health.progress({ resource: 'units', pages: 0, pageCount: 0 });
      health.progress({ resource: 'units', pages: 1, pageCount: 300 });
      vi.advanceTimersByTime(900_000);
      expect(health.check()).toBe(true);
      vi.advanceTimersByTime(1_000);
      expect(health.check()).toBe(
        'no poller pass succeeds or moves: every resource it polls is stalled (units: pass under way at page 1 of 300, no page for 901 s)',
      );
      health.record({ resource: 'units', outcome: 'completed' });
      expect(health.check()).toBe(true);
    });
  });

  it('does not count passes skipped because another process polls the resource', () => {
    const health = createPassHealth();
    health.record({ resource: 'customers', outcome: 'skipped' });
    health.record({ resource: 'units', outcome: 'skipped' });
    expect(health.check()).toBe(true);
  });
});
