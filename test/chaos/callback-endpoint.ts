import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'svix';
import type { Check } from './invariants.js';
import type { ReadMessage } from './topic-reader.js';

/**
 * The PMS side of outcome callbacks in the chaos run: one HTTP endpoint the run serves itself (a
 * free port), one path per source (`/<source>`), every request verified with the `svix` library's
 * Webhook.verify and recorded. Each source's endpoint can be taken down for a while: it answers
 * 500, or refuses (the connection is destroyed without an answer), then comes back.
 */
export type EndpointMode = 'ok' | '500' | 'refuse';

export interface ReceivedCallback {
  source: string;
  webhookId: string;
  verified: boolean;
  /** What the endpoint answered: 200, 500, or null (refused). */
  status: number | null;
  at: number;
}

export interface Outage {
  source: string;
  fromMs: number;
  toMs: number;
  /** 500 for the first half, refused for the second. */
  detail: string;
  /**
   * Whether the other sources' latency while it is down is checked (an outage while nothing else
   * touches callbacks), or only reported (one overlapping the broker's and the role's faults).
   */
  checkIsolation: boolean;
}

export interface CallbackEndpoint {
  url(source: string): string;
  received: ReceivedCallback[];
  setMode(source: string, mode: EndpointMode): void;
  /** Runs the outages (offsets from `t0`); resolves when the last one is over. */
  runOutages(outages: Outage[], t0: number, log: (m: string) => void): Promise<void>;
  close(): Promise<void>;
}

export async function startCallbackEndpoint(secrets: Record<string, string[]>): Promise<CallbackEndpoint> {
  const received: ReceivedCallback[] = [];
  const modes = new Map<string, EndpointMode>();
  const timers: NodeJS.Timeout[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const source = (req.url ?? '/').slice(1);
      const body = Buffer.concat(chunks).toString('utf8');
      const verified = (secrets[source] ?? []).some((secret) => {
        try {
          new Webhook(secret).verify(body, req.headers as Record<string, string>);
          return true;
        } catch {
          return false;
        }
      });
      const mode = modes.get(source) ?? 'ok';
      const status = mode === 'ok' ? (secrets[source] ? 200 : 404) : mode === '500' ? 500 : null;
      const webhookId = String(req.headers['webhook-id'] ?? '');
      received.push({ source, webhookId, verified, status, at: Date.now() });
      if (status === null) req.socket.destroy();
      else res.writeHead(status, { 'content-type': 'text/plain' }).end(`answer ${status}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (source) => `http://127.0.0.1:${port}/${source}`,
    received,
    setMode: (source, mode) => modes.set(source, mode),
    runOutages(outages, t0, log) {
      const ends = outages.map(
        (o) =>
          new Promise<void>((resolve) => {
            const mid = (o.fromMs + o.toMs) / 2;
            const at = (ms: number, fn: () => void) =>
              timers.push(setTimeout(fn, Math.max(0, t0 + ms - Date.now())));
            at(o.fromMs, () => {
              log(`callback endpoint of ${o.source}: answers 500`);
              modes.set(o.source, '500');
            });
            at(mid, () => {
              log(`callback endpoint of ${o.source}: refuses connections`);
              modes.set(o.source, 'refuse');
            });
            at(o.toMs, () => {
              log(`callback endpoint of ${o.source}: back (200)`);
              modes.set(o.source, 'ok');
              resolve();
            });
          }),
      );
      return Promise.all(ends).then(() => undefined);
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The outages of the run: `beta`'s endpoint (the second source) is dead for a long stretch of the
 * first half, while nothing else touches callbacks (the callbacks role is killed in the second
 * half only), so acme's latency then says what a dead endpoint costs another source; acme's own
 * endpoint goes down for a while in the second half.
 */
export function planOutages(seconds: number, primary: string, second: string): Outage[] {
  const total = seconds * 1000;
  return [
    {
      source: second,
      fromMs: Math.round(total * 0.15),
      toMs: Math.round(total * 0.5),
      detail: '500, then refused',
      checkIsolation: true,
    },
    {
      source: primary,
      fromMs: Math.round(total * 0.75),
      toMs: Math.round(total * 0.92),
      detail: '500, then refused',
      checkIsolation: false,
    },
  ];
}

/** An outcome on Kafka that a source with callbacks must hear of: its expected webhook-id. */
interface ExpectedCallback {
  source: string;
  webhookId: string;
  /** When the outcome landed on Kafka (the message's timestamp), ms. */
  publishedAt: number;
}

function expectedCallbacks(topics: Map<string, ReadMessage[]>, sources: ReadonlySet<string>) {
  const out = new Map<string, ExpectedCallback>();
  for (const [topic, messages] of topics) {
    if (!topic.startsWith('outcomes.')) continue;
    for (const m of messages) {
      let event: { id?: unknown; data?: { command_source?: unknown; status?: unknown } };
      try {
        event = JSON.parse(m.value) as typeof event;
      } catch {
        continue;
      }
      const source = event.data?.command_source;
      if (typeof event.id !== 'string' || typeof source !== 'string' || !sources.has(source)) continue;
      // The contract (DESIGN.md, outcome callbacks): webhook-id is the outcome's CloudEvent id,
      // which names the command and its result.
      const webhookId = event.id;
      const key = `${source}/${webhookId}`;
      const publishedAt = Number(m.timestamp ?? 0);
      const seen = out.get(key);
      // A republished outcome is the same callback: latency counts from its first appearance.
      if (!seen || publishedAt < seen.publishedAt) out.set(key, { source, webhookId, publishedAt });
    }
  }
  return [...out.values()];
}

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const s = (ms: number | null) => (ms === null ? '-' : `${(ms / 1000).toFixed(2)} s`);

/**
 * Acme's median and p99 delivery latency over outcomes published while beta's endpoint was dead
 * (minus its last few seconds, so that an outcome's delivery falls inside it) may not exceed these:
 * a dead endpoint takes only its own source's slots.
 */
export const ISOLATION_P50_MS = 3000;
export const ISOLATION_P99_MS = 10_000;

export function analyseCallbacks(input: {
  topics: Map<string, ReadMessage[]>;
  received: ReceivedCallback[];
  sources: string[];
  outages: Outage[];
  t0: number;
}): { checks: Check[]; figures: Record<string, string | number> } {
  const sources = new Set(input.sources);
  const expected = expectedCallbacks(input.topics, sources);
  const firstOk = new Map<string, number>();
  const okCount = new Map<string, number>();
  for (const r of input.received) {
    if (r.status === null || r.status >= 300 || !r.verified) continue;
    const key = `${r.source}/${r.webhookId}`;
    okCount.set(key, (okCount.get(key) ?? 0) + 1);
    if (!firstOk.has(key) || r.at < firstOk.get(key)!) firstOk.set(key, r.at);
  }
  const mk = (name: string): Check => ({ name, ok: true, checked: 0, failures: [], failureCount: 0 });
  const fail = (c: Check, detail: string) => {
    c.ok = false;
    c.failureCount += 1;
    if (c.failures.length < 10) c.failures.push(detail);
  };

  const delivered = mk('every outcome of a source with callbacks delivered at least once (2xx, verified)');
  for (const e of expected) {
    delivered.checked += 1;
    if (!firstOk.has(`${e.source}/${e.webhookId}`))
      fail(delivered, `${e.source}: ${e.webhookId} not delivered`);
  }
  if (expected.length === 0) fail(delivered, 'no outcome of a source with callbacks on Kafka');

  const verified = mk('every callback body verified by svix (Standard Webhooks signature)');
  for (const r of input.received) {
    verified.checked += 1;
    if (!r.verified) fail(verified, `${r.source}: ${r.webhookId} did not verify`);
  }

  const figures: Record<string, string | number> = {};
  const latencies = new Map<string, number[]>();
  for (const e of expected) {
    const at = firstOk.get(`${e.source}/${e.webhookId}`);
    if (at === undefined) continue;
    const list = latencies.get(e.source) ?? [];
    list.push(Math.max(0, at - e.publishedAt));
    latencies.set(e.source, list);
  }
  for (const source of input.sources) {
    const mine = input.received.filter((r) => r.source === source);
    const keys = [...okCount.keys()].filter((k) => k.startsWith(`${source}/`));
    const lat = (latencies.get(source) ?? []).sort((a, b) => a - b);
    figures[`${source}: outcomes on Kafka`] = expected.filter((e) => e.source === source).length;
    figures[`${source}: callbacks delivered (distinct webhook-id)`] = keys.length;
    figures[`${source}: duplicates (2xx again for a delivered webhook-id)`] = keys.reduce(
      (n, k) => n + okCount.get(k)! - 1,
      0,
    );
    figures[`${source}: requests received / answered 500 / refused`] =
      `${mine.length} / ${mine.filter((r) => r.status === 500).length} / ${mine.filter((r) => r.status === null).length}`;
    figures[`${source}: latency Kafka → first 2xx, p50 / p99`] =
      `${s(percentile(lat, 50))} / ${s(percentile(lat, 99))}`;
  }
  for (const o of input.outages) {
    figures[`${o.source}'s endpoint down (s after load start)`] =
      `${(o.fromMs / 1000).toFixed(1)}–${(o.toMs / 1000).toFixed(1)} (${o.detail})`;
  }

  // What a dead endpoint costs the others: each other source's latency while it was down.
  const isolation = mk(
    `a dead endpoint does not delay another source's callbacks (p50 ≤ ${ISOLATION_P50_MS / 1000} s, p99 ≤ ${ISOLATION_P99_MS / 1000} s while it is down)`,
  );
  for (const o of input.outages) {
    const from = input.t0 + o.fromMs;
    const to = input.t0 + o.toMs - 3000;
    for (const source of input.sources.filter((x) => x !== o.source)) {
      // Only while the other source's own endpoint is up (and not recovering).
      const ownDown = input.outages.filter((x) => x.source === source);
      const lat = expected
        .filter((e) => e.source === source && e.publishedAt >= from && e.publishedAt <= to)
        .filter(
          (e) =>
            !ownDown.some(
              (x) =>
                e.publishedAt >= input.t0 + x.fromMs - 1000 && e.publishedAt <= input.t0 + x.toMs + 10_000,
            ),
        )
        .flatMap((e) => {
          const at = firstOk.get(`${e.source}/${e.webhookId}`);
          return at === undefined ? [] : [Math.max(0, at - e.publishedAt)];
        })
        .sort((a, b) => a - b);
      if (lat.length === 0) continue;
      const p50 = percentile(lat, 50)!;
      const p99 = percentile(lat, 99)!;
      figures[`${source}: latency while ${o.source}'s endpoint was down, p50 / p99 (n)`] =
        `${s(p50)} / ${s(p99)} (${lat.length})`;
      if (!o.checkIsolation) continue;
      isolation.checked += lat.length;
      if (p50 > ISOLATION_P50_MS || p99 > ISOLATION_P99_MS)
        fail(isolation, `${source} while ${o.source} was down: p50 ${s(p50)}, p99 ${s(p99)}`);
    }
  }
  if (isolation.checked === 0) fail(isolation, 'no callback of another source while an endpoint was down');
  return { checks: [delivered, verified, isolation], figures };
}
