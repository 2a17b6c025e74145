import { describe, expect, it } from 'vitest';
import { nextAttemptAt, retryDelay } from '../../src/callbacks/callback-schedule.js';
import { createCircuitBreaker } from '../../src/callbacks/circuit-breaker.js';
import type { ConfigError } from '../../src/config/config.js';
import { loadConfig } from '../../src/config/config.js';
import { buildSecret } from '../receiver/webhooks.js';

const schedule = { initialMs: 1000, maxDelayMs: 60_000, spanMs: 3_600_000 };

describe('the callback retry schedule', () => {
  it('draws each wait from [0, min(cap, initial · 2^(n−1))] (full jitter)', () => {
    expect(retryDelay(schedule, 1, () => 0.999)).toBe(999);
    expect(retryDelay(schedule, 4, () => 0.5)).toBe(4000);
    expect(retryDelay(schedule, 30, () => 0.5)).toBe(30_000);
    expect(retryDelay(schedule, 1, () => 0)).toBe(0);
  });

  it('gives up (dead letter) once the next attempt would fall past the span', () => {
    const from = new Date('2026-11-25T00:00:00Z');
    const nearEnd = new Date(from.getTime() + schedule.spanMs - 10_000);
    expect(nextAttemptAt(schedule, from, 10, nearEnd, () => 0.1)).toEqual(new Date(nearEnd.getTime() + 6000));
    expect(nextAttemptAt(schedule, from, 10, nearEnd, () => 0.9)).toBeNull();
  });
});

describe('the circuit breaker', () => {
  const options = { failureThreshold: 3, cooldownMs: 1000, maxCooldownMs: 4000 };

  it('opens after the threshold of failures in a row, then lets one probe through after the cooldown', () => {
    const b = createCircuitBreaker(options);
    b.record(false, 0);
    b.record(true, 1);
    b.record(false, 2);
    b.record(false, 3);
    expect(b.allowance(4, 3)).toBe(4);
    expect(b.record(false, 4)).toBe('open');
    expect(b.allowance(4, 500)).toBe(0);
    expect(b.state(1004)).toBe('half_open');
    expect(b.allowance(4, 1004)).toBe(1);
  });

  it('doubles the cooldown after a failed probe (up to the cap), and closes on a success', () => {
    const b = createCircuitBreaker(options);
    for (let i = 0; i < 3; i++) b.record(false, 0);
    expect(b.record(false, 1000)).toBe('open');
    expect(b.state(2999)).toBe('open');
    expect(b.state(3000)).toBe('half_open');
    b.record(false, 3000);
    b.record(false, 7000);
    expect(b.probeAt()).toBe(11_000);
    expect(b.record(true, 11_000)).toBe('closed');
    expect(b.allowance(4, 11_000)).toBe(4);
  });
});

describe('PMS_CALLBACKS', () => {
  const problems = (value: string) => {
    try {
      loadConfig({ PMS_CALLBACKS: value });
      return [];
    } catch (error) {
      return (error as ConfigError).problems;
    }
  };

  it('takes a URL and secrets per source', () => {
    const secret = buildSecret();
    const config = loadConfig({
      PMS_CALLBACKS: JSON.stringify({
        acme: { url: 'https://pms.example/outcomes', secrets: [secret], timeout_ms: 5000 },
      }),
    });
    expect(config.PMS_CALLBACKS.acme).toEqual({
      url: 'https://pms.example/outcomes',
      secrets: [secret],
      timeout_ms: 5000,
    });
  });

  it('refuses bad JSON, a non-http URL and a malformed secret, naming the variable and never the secret', () => {
    expect(problems('{nope')).toEqual([expect.stringMatching(/^PMS_CALLBACKS: must be JSON/)]);
    expect(problems(JSON.stringify({ acme: { url: 'ftp://x/y', secrets: [buildSecret()] } }))[0]).toMatch(
      /^PMS_CALLBACKS: must be an http\(s\) URL/,
    );
    const leaked = 'not-a-whsec-value-1234';
    const bad = problems(JSON.stringify({ acme: { url: 'https://x/y', secrets: [leaked] } }));
    expect(bad[0]).toMatch(/^PMS_CALLBACKS: each secret must be a Standard Webhooks secret/);
    expect(bad.join('\n')).not.toContain(leaked);
    expect(problems(JSON.stringify({ acme: { url: 'https://x/y', secrets: [] } }))[0]).toMatch(
      /at least one secret/,
    );
  });
});
