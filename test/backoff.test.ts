import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../src/backoff.js';

describe('backoffDelay (the one back-off, kafkajs retrier shape)', () => {
  it('waits initialRetryTime after the first failure, multiplied by each further one', () => {
    const policy = { initialRetryTime: 500, maxRetryTime: 60_000 };
    expect([0, 1, 2, 3, 4].map((n) => backoffDelay(policy, n))).toEqual([500, 500, 1000, 2000, 4000]);
    expect(backoffDelay({ ...policy, multiplier: 3 }, 3)).toBe(4500);
  });

  it('never waits longer than maxRetryTime, jitter included', () => {
    expect(backoffDelay({ initialRetryTime: 1000, maxRetryTime: 30_000 }, 20)).toBe(30_000);
    expect(backoffDelay({ initialRetryTime: 1000, maxRetryTime: 1500, jitterMs: 1000 }, 1, () => 0.9)).toBe(
      1500,
    );
  });

  it('stops growing after maxGrowths', () => {
    const policy = { initialRetryTime: 400, maxRetryTime: Number.POSITIVE_INFINITY, maxGrowths: 9 };
    expect(backoffDelay(policy, 10)).toBe(400 * 2 ** 9);
    expect(backoffDelay(policy, 50)).toBe(400 * 2 ** 9);
  });

  it('spreads the capped wait by ±factor', () => {
    const policy = { initialRetryTime: 1000, maxRetryTime: 2000, factor: 0.25 };
    expect(backoffDelay(policy, 5, () => 0)).toBe(1500);
    expect(backoffDelay(policy, 5, () => 1)).toBe(2500);
    expect(backoffDelay(policy, 1, () => 0.5)).toBe(1000);
  });

  it('adds up to jitterMs before the cap', () => {
    expect(backoffDelay({ initialRetryTime: 500, maxRetryTime: 60_000, jitterMs: 1000 }, 2, () => 0.5)).toBe(
      1500,
    );
  });
});
