import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';

/** The limits of issue 14 are deliberate defaults, documented in the README, and can be changed. */
describe('configuration of limits', () => {
  it('bounds slow senders, storage waits and Kafka requests by default', () => {
    const c = loadConfig({});
    expect(c.HTTP_REQUEST_TIMEOUT_MS).toBe(30_000);
    expect(c.HTTP_HEADERS_TIMEOUT_MS).toBe(10_000);
    expect(c.HTTP_KEEP_ALIVE_TIMEOUT_MS).toBe(5000);
    expect(c.HTTP_MAX_CONNECTIONS).toBe(1024);
    expect(c.WEBHOOK_STORAGE_TIMEOUT_MS).toBe(5000);
    expect(c.WEBHOOK_MAX_IN_FLIGHT).toBe(256);
    // Below Kafka's default message.max.bytes (1,048,588).
    expect(c.RELAY_MAX_BATCH_BYTES).toBeLessThan(1_048_588);
    expect(c.RELAY_STALL_SECONDS).toBe(120);
    expect(c.METRICS_TOKEN).toBeUndefined();
  });

  it('takes other values and refuses a short METRICS_TOKEN', () => {
    const c = loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '5000', RELAY_MAX_BATCH_BYTES: '500000' });
    expect(c.HTTP_REQUEST_TIMEOUT_MS).toBe(5000);
    expect(c.RELAY_MAX_BATCH_BYTES).toBe(500_000);
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN/);
    expect(() => loadConfig({ RELAY_MAX_BATCH_BYTES: '10' })).toThrow(/RELAY_MAX_BATCH_BYTES/);
  });
});
