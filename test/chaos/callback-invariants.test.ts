import { describe, expect, it } from 'vitest';
import { analyseCallbacks, type Outage, type ReceivedCallback } from './callback-endpoint.js';
import type { ReadMessage } from './topic-reader.js';

/** The chaos run's callback checks, each failing on evidence of its broken promise. */
const T0 = 1_000_000;
const outages: Outage[] = [
  { source: 'beta', fromMs: 5000, toMs: 20_000, detail: '500, then refused', checkIsolation: true },
];

function outcomeMessage(source: string, n: number, atMs: number): ReadMessage {
  return {
    topic: 'outcomes.rental-payments',
    partition: 0,
    offset: String(n),
    key: null,
    value: JSON.stringify({
      id: `outcome.${source}-${n}.applied`,
      data: { command_source: source, command_id: `${source}-${n}`, status: 'applied' },
    }),
    headers: {},
    timestamp: String(T0 + atMs),
  };
}

function evidence(mutate: (received: ReceivedCallback[]) => void = () => undefined) {
  // acme: outcomes every second, during beta's outage too; beta: one outcome, delivered late.
  const messages = [
    ...Array.from({ length: 20 }, (_, i) => outcomeMessage('acme', i, i * 1000)),
    outcomeMessage('beta', 0, 6000),
  ];
  const received: ReceivedCallback[] = [
    ...messages.slice(0, 20).map((_, i) => ({
      source: 'acme',
      webhookId: `outcome.acme-${i}.applied`,
      verified: true,
      status: 200,
      at: T0 + i * 1000 + 150,
    })),
    { source: 'beta', webhookId: 'outcome.beta-0.applied', verified: true, status: 500, at: T0 + 6100 },
    { source: 'beta', webhookId: 'outcome.beta-0.applied', verified: true, status: 200, at: T0 + 21_000 },
  ];
  mutate(received);
  return analyseCallbacks({
    topics: new Map([['outcomes.rental-payments', messages]]),
    received,
    sources: ['acme', 'beta'],
    outages,
    t0: T0,
  });
}

const byName = (r: ReturnType<typeof evidence>, start: string) =>
  r.checks.find((c) => c.name.startsWith(start))!;

describe('the chaos run checks of outcome callbacks', () => {
  it('hold when every outcome was delivered, verified, and acme was not delayed', () => {
    const r = evidence();
    expect(r.checks.map((c) => [c.name.slice(0, 30), c.ok])).toEqual(
      r.checks.map((c) => [c.name.slice(0, 30), true]),
    );
    expect(r.figures['beta: duplicates (2xx again for a delivered webhook-id)']).toBe(0);
  });

  it('fail when an outcome was only answered 500, never 2xx', () => {
    const r = evidence((received) => received.pop());
    const check = byName(r, 'every outcome of a source');
    expect(check.ok).toBe(false);
    expect(check.failures).toEqual(['beta: outcome.beta-0.applied not delivered']);
  });

  it('fail when a callback does not verify', () => {
    const r = evidence((received) => (received[3]!.verified = false));
    expect(byName(r, 'every callback body verified').ok).toBe(false);
    // Not verified is not delivered either.
    expect(byName(r, 'every outcome of a source').ok).toBe(false);
  });

  it("fail when acme's callbacks wait while beta's endpoint is down", () => {
    const r = evidence((received) => {
      for (const x of received)
        if (x.source === 'acme' && x.at > T0 + 5000 && x.at < T0 + 17_000) x.at += 12_000;
    });
    expect(byName(r, 'a dead endpoint does not delay').ok).toBe(false);
  });

  it('count a second 2xx of one webhook-id as a duplicate', () => {
    const r = evidence((received) => received.push({ ...received[0]!, at: received[0]!.at + 5000 }));
    expect(r.figures['acme: duplicates (2xx again for a delivered webhook-id)']).toBe(1);
  });
});
