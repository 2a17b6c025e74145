import { createLogger } from '../../src/logger.js';
import { createPartnerClient, createRateBudget, type PartnerClient } from '../../src/partner/index.js';
import type { Resource } from '../../src/partner/resources.js';
import {
  createPoller,
  createRequestCounter,
  type Poller,
  type PollerOptions,
} from '../../src/poller/index.js';
import { createSandboxControl, startSandbox } from '../../src/dev/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * A poller test's world: its own schema, a sandbox over HTTP, and a Partner API client whose
 * fetch records every request (and can run a hook before one goes out).
 */
export interface PollerHarness {
  database: TestDatabase;
  control: ReturnType<typeof createSandboxControl>;
  partner: PartnerClient;
  /** Every request the client sent, in order. */
  requests: URL[];
  /** Runs before each request reaches the sandbox. */
  beforeRequest?: (url: URL) => void | Promise<void>;
  poller(overrides?: Partial<PollerOptions>): Poller;
  /** Outbox rows of `partner.<resource>`, oldest first. */
  events(resource: Resource): Promise<{ key: string; type: string; data: Record<string, unknown> }[]>;
  /** The list requests of one collection, as query objects. */
  listQueries(path: string): Record<string, string>[];
  close(): Promise<void>;
}

export const silent = createLogger({ level: 'silent' });

/** `limitPerMinute`: the client takes its slots from a shared budget of that limit (default: none). */
export async function createPollerHarness(options: { limitPerMinute?: number } = {}): Promise<PollerHarness> {
  const database = await createTestDatabase();
  const sandbox = await startSandbox({ port: 0 });
  const control = createSandboxControl(sandbox.url);
  const pollers: Poller[] = [];
  const harness: PollerHarness = {
    database,
    control,
    requests: [],
    partner: undefined as unknown as PartnerClient,
    poller(overrides = {}) {
      const p = createPoller({
        partner: harness.partner,
        db: database.db,
        databaseUrl: database.url,
        logger: silent,
        requestCounter: counter,
        ...overrides,
      });
      pollers.push(p);
      return p;
    },
    async events(resource) {
      const rows = await database.db.outboxMessage.findMany({
        where: { topic: `partner.${resource}` },
        orderBy: { id: 'asc' },
      });
      return rows.map((r) => ({ key: r.key, type: r.type, data: r.data as Record<string, unknown> }));
    },
    listQueries(path) {
      return harness.requests
        .filter((u) => u.pathname === path)
        .map((u) => Object.fromEntries(u.searchParams.entries()));
    },
    async close() {
      for (const p of pollers) await p.stop();
      await sandbox.close();
      await database.drop();
    },
  };
  const recordingFetch: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!url.pathname.startsWith('/__sandbox')) {
      await harness.beforeRequest?.(url);
      harness.requests.push(url);
    }
    return fetch(input, init);
  };
  const counter = createRequestCounter(recordingFetch);
  harness.partner = createPartnerClient({
    baseUrl: sandbox.url,
    accessKey: 'sandbox-access-key',
    secretKey: 'sandbox-secret-key',
    logger: silent,
    fetch: counter.fetch,
    ...(options.limitPerMinute && {
      budget: createRateBudget({ db: database.db, limitPerMinute: options.limitPerMinute, logger: silent }),
    }),
  });
  return harness;
}

/** `count` records for a collection, ids `${prefix}-001`..., updated on `updatedAt`. */
export function buildRecords(
  count: number,
  overrides: (i: number) => Record<string, unknown> = () => ({}),
): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({ status: 'open', ...overrides(i) }));
}
